"""`sage serve` spoken to by the MCP SDK's own client over real stdio and streamable HTTP (SPEC §21): listing,
calls with structured and text results, wrong arguments, an unknown tool, an uncaught error, 50 calls at
once, cancellation, and the log and progress notifications of `print` / `print_err`; both protocol eras."""
from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client

from .helpers import HttpServer, environment, serve_command, write_project


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("served") / "helpdesk")


def stdio_params(project, tmp_path) -> StdioServerParameters:
    command = serve_command(project)
    return StdioServerParameters(command=command[0], args=command[1:], env=environment(tmp_path))


async def exercise(client: Client, tmp_path) -> None:
    """What every transport and era must do alike."""
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["triage", "echo", "nap", "ticker", "boom"]
    triage = listed.tools[0]
    assert triage.title == "Triage" and triage.description == "Triage one ticket."
    assert triage.input_schema["required"] == ["title"]
    assert triage.input_schema["properties"]["title"] == {"type": "string", "description": "The ticket's title."}
    assert triage.output_schema["properties"]["result"]["required"] == ["title", "priority"]
    assert triage.annotations.read_only_hint is True and triage.annotations.destructive_hint is False
    assert listed.tools[3].annotations.destructive_hint is True     # append_file

    progress: list = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    result = await client.call_tool("triage", {"title": "printer on fire", "urgency": 5},
                                    progress_callback=on_progress)
    assert not result.is_error
    assert result.structured_content == {"result": {"title": "printer on fire", "priority": 5}}
    assert json.loads(result.content[0].text) == {"title": "printer on fire", "priority": 5}
    assert progress == [(1.0, "triaging printer on fire")]

    result = await client.call_tool("echo", {"text": "héllo"})
    assert result.content[0].text == "héllo" and result.structured_content is None and not result.is_error

    result = await client.call_tool("triage", {"title": 3})
    assert result.is_error
    assert result.content[0].text == "invalid argument `title`: expected String at $.title, got 3"
    result = await client.call_tool("triage", {})
    assert result.is_error and result.content[0].text == "missing argument `title`: expected String"

    result = await client.call_tool("boom", {})
    assert result.is_error and "it broke" in result.content[0].text

    with pytest.raises(MCPError, match="Unknown tool: nope"):
        await client.call_tool("nope", {})

    results = [None] * 50

    async def one(i: int) -> None:
        results[i] = await client.call_tool("nap", {"ms": 100 + i})

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(one, i)
    assert [r.structured_content for r in results] == [{"result": 100 + i} for i in range(50)]

    ticks = tmp_path / "ticks.txt"
    started = anyio.Event()

    async def ticking(value, total, message):
        started.set()

    with anyio.CancelScope() as scope:
        async def cancel_when_ticking():
            await started.wait()
            scope.cancel()
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_ticking)
            await client.call_tool("ticker", {"path": str(ticks)}, progress_callback=ticking)
    assert scope.cancelled_caught
    # the server keeps serving after the cancelled call
    assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio(project, tmp_path, mode):
    logs: list = []

    async def on_log(params):
        logs.append((params.level, params.data))

    errlog = open(tmp_path / "server.log", "w")
    async with Client(stdio_client(stdio_params(project, tmp_path), errlog=errlog), mode=mode,
                      logging_callback=on_log, log_level="info", read_timeout_seconds=120) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        assert client.server_info.name == "helpdesk" and client.server_info.version == "1.2.0"
        await exercise(client, tmp_path)
    errlog.close()
    assert ("info", "triaging printer on fire") in logs
    assert ("warning", "careful with printer on fire") in logs
    log = (tmp_path / "server.log").read_text()
    assert "refused a call of triage: invalid argument `title`" in log
    assert "refused a call of unknown tool 'nope'" in log
    assert "call of ticker cancelled by the client" in log and "call of ticker: its run stopped" in log


@pytest.mark.anyio
async def test_streamable_http(project, tmp_path):
    server = HttpServer(project, tmp_path)
    try:
        async with Client(server.url, read_timeout_seconds=120) as client:
            await exercise(client, tmp_path)
        assert "call of ticker: its run stopped" in server.wait_for("its run stopped")
    finally:
        server.stop()


def test_list_prints_what_tools_list_returns(project, tmp_path):
    listed = subprocess.run(serve_command(project, "--list"), env=environment(tmp_path), capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    printed = json.loads(listed.stdout)

    async def raw_listing():
        async with Client(stdio_client(stdio_params(project, tmp_path), errlog=open(tmp_path / "e.log", "w")),
                          mode="legacy", read_timeout_seconds=120) as client:
            from mcp.types import ListToolsRequest, ListToolsResult
            result = await client.session.send_request(ListToolsRequest(), ListToolsResult)
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    assert anyio.run(raw_listing)["tools"] == printed["tools"]


def test_nothing_to_serve(tmp_path):
    root = write_project(tmp_path / "plain", main="agent Main {\n    on start {\n        yield(0);\n    }\n}\n\nrun Main;\n")
    done = subprocess.run(serve_command(root, "--list"), env=environment(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert done.stderr == 'error: nothing to serve: no agent is marked #[mcp_tool = "…"]\n'
