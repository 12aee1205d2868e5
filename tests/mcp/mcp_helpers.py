"""Helpers of the MCP tests: paths of the test servers, Sage types, and managers that are always
closed (every server process reaped) when their test or module ends.

The tests talk to real servers over real stdio and HTTP: the project's own servers in `servers/` and the
third-party ones: `mcp-server-time` and `mcp-server-git` from the test extra, server-everything and
server-filesystem installed with npm into `node/node_modules` on first use (tests/conftest.py). A Python
MCP server needs about 2-3 s to start on a small machine, so connections are shared within a module
wherever the tests allow it.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from sagepy.grove.servers import McpSettings, parse_tools_config
from sagepy.mcp.pool import ConnectionPool
from sagepy.core.types import BOOL, INT, STRING, OptionT, RecordInfo, RecordT

HERE = os.path.dirname(os.path.abspath(__file__))
SERVERS = os.path.join(HERE, "servers")
SUITE = os.path.join(SERVERS, "suite.py")
EXITS = os.path.join(SERVERS, "exits.py")
HANGS = os.path.join(SERVERS, "hangs.py")
NODE_BIN = os.path.join(HERE, "node", "node_modules", ".bin")

POINT = RecordT(RecordInfo("Point", [], [("x", INT), ("y", INT)]))
PERSON = RecordT(RecordInfo("Person", [], [("name", STRING), ("age", INT), ("email", OptionT(STRING))]))
TIME_RESULT = RecordT(RecordInfo("TimeResult", [], [
    ("timezone", STRING), ("datetime", STRING), ("day_of_week", STRING), ("is_dst", BOOL)]))


def call_typed(manager: ConnectionPool, server: str, label: str, remote: str, arguments: dict, return_type):
    """A typed call as the effects layer makes it: the manager's wire result converted to the return type,
    a failure as the Sage error the program sees."""
    from sagepy.effects.wire import UNREAD, mcp_errors, typed_result, typed_value
    with mcp_errors():
        data, read = typed_result(manager.call_typed(server, label, remote, arguments), return_type, label, remote)
        return read if read is not UNREAD else typed_value(data, return_type, label, remote)


def suite_server(*extra: str, **keys) -> dict:
    """A `[tools.X]` table that starts the suite server with this interpreter."""
    table = {"command": sys.executable, "args": [SUITE, *extra]}
    table.update(keys)
    return table


def node_server(name: str) -> str:
    path = os.path.join(NODE_BIN, name)
    if not os.path.exists(path):
        pytest.fail(f"{name} is not installed (the node_servers fixture installs tests/mcp/node)")
    return path


def installed(command: str) -> str:
    path = shutil.which(command)
    if path is None:
        pytest.fail(f"{command} is not installed (it comes with the test extra: pip install -e '.[test]')")
    return path


class Managers:
    """Creates managers over a project directory and closes them all at teardown."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.made: list[ConnectionPool] = []

    def __call__(self, tools: dict | None = None, mcp: dict | None = None, **hooks) -> ConnectionPool:
        config = {"tools": tools or {}}
        if mcp is not None:
            config["mcp"] = mcp
        servers, diagnostics = parse_tools_config(config, None)
        assert diagnostics == [], [d.message for d in diagnostics]
        # a command's session reads SAGE_OAUTH_OPEN once; a manager made here reads it when it is made
        settings = McpSettings(**(mcp or {}), oauth_open=os.environ.get("SAGE_OAUTH_OPEN"))
        manager = ConnectionPool(self.root, servers, settings, **hooks)
        self.made.append(manager)
        return manager

    def close(self) -> None:
        for manager in self.made:
            manager.close_all()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_http_suite(where: str, *extra: str) -> tuple[subprocess.Popen, int]:
    """The suite server over streamable HTTP on a free port, started in `where`, once its port accepts
    connections (or after 30 s). The caller stops it."""
    port = free_port()
    server = subprocess.Popen([sys.executable, SUITE, "--http", str(port), "--marker-dir", where, *extra],
                              cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return server, port
