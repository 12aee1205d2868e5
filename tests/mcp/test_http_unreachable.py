"""An MCP server over HTTP that cannot be reached names the URL that was tried, on one line (issue 17, §8.10)."""
from __future__ import annotations

import pytest

from mcp_helpers import call_typed, start_http_suite
from sagepy.core.errors import SageRaise
from sagepy.effects.wire import mcp_errors
from sagepy.core.types import STRING


def error_of(fn, *args) -> str:
    with pytest.raises(SageRaise) as caught, mcp_errors():
        fn(*args)
    return caught.value.error.display()


def test_a_server_gone_between_calls_is_named_by_its_url(tmp_path, managers):
    server, port = start_http_suite(str(tmp_path))
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        manager = managers({"Remote": {"url": url}})
        assert call_typed(manager, "Remote", "Remote.e", "echo", {"text": "hi"}, STRING) == "hi"
    finally:
        server.kill()   # uvicorn's graceful stop would wait for the client's open event stream
        server.wait(10)
    # The call that finds the connection broken says so: refused (the kept-alive connection was closed, so a new
    # one is tried), or an I/O error at the URL (a POST whose answer the kill cut short); the next one is refused.
    first = error_of(call_typed, manager, "Remote", "Remote.e", "echo", {"text": "again"}, STRING)
    assert first.startswith(f"MCP I/O error: 'Remote' at {url}: ") or \
        first == f"MCP connection failed: 'Remote' at {url}: Connection refused" or \
        first == "MCP server exited: connection to 'Remote' closed", first
    assert error_of(call_typed, manager, "Remote", "Remote.e", "echo", {"text": "again"}, STRING) == \
        f"MCP connection failed: 'Remote' at {url}: Connection refused"
