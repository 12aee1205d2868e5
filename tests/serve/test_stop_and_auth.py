"""`sage serve` stops cleanly (SPEC §21, §4.9): on end of input, SIGTERM and SIGINT, with a call in flight whose
run has started an MCP server of its own, no process is left behind. Over HTTP with `auth = "bearer"`, a
request without the token gets HTTP 401, and the token is never written to the log."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import anyio
import httpx
import pytest

from .helpers import SUITE, HttpServer, environment, serve_command, write_project

SLOW = textwrap.dedent("""\
    tool Suite {
        fn slow(seconds: Float, tag: String) -> String
    }

    /// Wait on the suite server.
    #[mcp_tool = "wait"]
    agent Wait {
        use Suite;
        on start {
            print("calling");
            let said = try Suite.slow(120.0, "serve");
            yield(said);
        }
    }

    /// Say it back.
    #[mcp_tool = "echo"]
    agent Echo {
        text: String,
        on start {
            yield(self.text);
        }
    }
    """)


def suite_table(tmp_path) -> str:
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    return (f'\n[tools.Suite]\ncommand = {json.dumps(sys.executable)}\n'
            f'args = [{json.dumps(SUITE)}, "--marker-dir", {json.dumps(str(markers))}]\n')


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError):
                pass
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("stop", ["stdin", "SIGTERM", "SIGINT"])
def test_no_process_left_after_stop(tmp_path, stop):
    project = write_project(tmp_path / "p", SLOW, suite_table(tmp_path))
    proc = subprocess.Popen(serve_command(project), env=environment(tmp_path), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
    for message in (init, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
        proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    assert json.loads(proc.stdout.readline())["params"]["data"] == "calling"   # the run has started
    deadline = time.monotonic() + 120
    suite = []
    while not suite and time.monotonic() < deadline:   # the run's MCP server process, once it is up
        suite = [pid for pid in _children_of(proc.pid) if "suite.py" in open(f"/proc/{pid}/cmdline").read()]
    assert suite, "the served run never started its MCP server"
    if stop == "stdin":
        proc.stdin.close()
    else:
        proc.send_signal(getattr(signal, stop))
    assert proc.wait(120) == {"stdin": 0, "SIGTERM": 143, "SIGINT": 130}[stop]
    assert not _alive(suite[0])
    assert not [pid for pid in _children_of(proc.pid) if _alive(pid)]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_bearer_token(tmp_path):
    token = "s3rve-t0ken-" + "q" * 20
    project = write_project(tmp_path / "p", SLOW, '\n[serve]\nauth = "bearer"\ntoken_env = "SERVE_TOKEN"\n')
    missing = subprocess.run(serve_command(project, "--http", "127.0.0.1:0"), env=environment(tmp_path),
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1
    assert "the variable SERVE_TOKEN holding the token is not set" in missing.stderr
    server = HttpServer(project, tmp_path, env=environment(tmp_path, SERVE_TOKEN=token))
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
        headers = {"accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=60) as http:
            assert (await http.post(server.url, json=body, headers=headers)).status_code == 401
            wrong = {**headers, "authorization": "Bearer not-" + token}
            assert (await http.post(server.url, json=body, headers=wrong)).status_code == 401
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=httpx2.Timeout(60, read=300)) as http:
            async with Client(streamable_http_client(server.url, http_client=http), read_timeout_seconds=120) as c:
                assert (await c.call_tool("echo", {"text": "in"})).content[0].text == "in"
    finally:
        server.stop()
    log = server.log()
    assert "refused an HTTP request from 127.0.0.1: no bearer token" in log
    assert "refused an HTTP request from 127.0.0.1: wrong bearer token" in log
    assert token not in log
