"""The official MCP Inspector in its CLI mode (npm `@modelcontextprotocol/inspector`, locked in
tests/mcp/node) lists and calls the served example project over stdio and streamable HTTP (SPEC §21)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .helpers import REPO, HttpServer, environment

pytestmark = pytest.mark.usefixtures("node_servers")

EXAMPLE = REPO / "examples" / "served"
FAQ = "Where are invoices? Invoices are under Settings > Billing > Invoices."


def inspector(tmp_path, *args: str) -> dict:
    command = [str(REPO / "tests" / "mcp" / "node" / "node_modules" / ".bin" / "mcp-inspector"), "--cli", *args]
    done = subprocess.run(command, env=environment(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def check(tmp_path, *target: str) -> None:
    listed = inspector(tmp_path, *target, "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}
    assert tools["faq"]["annotations"]["readOnlyHint"] is True
    assert tools["cleanup"]["annotations"]["destructiveHint"] is True
    called = inspector(tmp_path, *target, "--method", "tools/call", "--tool-name", "faq", "--tool-arg", "word=invoice")
    assert called["isError"] is False
    assert called["structuredContent"] == {"result": {"question": "invoice", "lines": [FAQ]}}


def test_stdio(tmp_path):
    check(tmp_path, "-e", f"PYTHONPATH={REPO}", "-e", f"SAGE_CACHE_DIR={tmp_path / 'cache'}",
          sys.executable, "-m", "sagepy", "serve", str(EXAMPLE))


def test_streamable_http(tmp_path):
    server = HttpServer(EXAMPLE, tmp_path)
    try:
        check(tmp_path, server.url, "--transport", "http")
    finally:
        server.stop()
