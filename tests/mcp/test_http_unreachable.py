"""An MCP server over HTTP that cannot be reached names the URL that was tried, on one line (issue 17, §8.10)."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from mcp_helpers import SUITE, call_typed
from sagepy.runtime.errors import SageRaise
from sagepy.types import STRING


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def error_of(fn, *args) -> str:
    with pytest.raises(SageRaise) as caught:
        fn(*args)
    return caught.value.error.display()


def test_a_server_gone_between_calls_is_named_by_its_url(tmp_path, managers):
    port = _free_port()
    server = subprocess.Popen([sys.executable, SUITE, "--http", str(port), "--marker-dir", str(tmp_path)],
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        manager = managers({"Remote": {"url": url}})
        assert call_typed(manager, "Remote", "Remote.e", "echo", {"text": "hi"}, STRING) == "hi"
    finally:
        server.kill()   # uvicorn's graceful stop would wait for the client's open event stream
        server.wait(10)
    # The call that finds the connection broken says so; the next one opens a new connection (§8.3), which
    # is refused.
    first = error_of(call_typed, manager, "Remote", "Remote.e", "echo", {"text": "again"}, STRING)
    assert first in (f"MCP I/O error: 'Remote' at {url}: Connection refused",
                     "MCP server exited: connection to 'Remote' closed"), first
    assert error_of(call_typed, manager, "Remote", "Remote.e", "echo", {"text": "again"}, STRING) == \
        f"MCP connection failed: 'Remote' at {url}: Connection refused"
