"""Streamable HTTP with a bearer token (SPEC §8.2), against the suite server served by uvicorn on
127.0.0.1."""
from __future__ import annotations

import json

import pytest

from mcp_helpers import POINT, call_typed, free_port, start_http_suite
from sagepy.core.errors import SageRaise
from sagepy.effects.wire import mcp_errors
from sagepy.core.values import Record
from sagepy.core.types import STRING

TOKEN = "s3cr3t-token"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    server, port = start_http_suite(str(tmp_path_factory.mktemp("http")), "--token", TOKEN)
    yield f"http://127.0.0.1:{port}/mcp"
    server.terminate()
    server.wait(10)


def error_of(fn, *args) -> str:
    with pytest.raises(SageRaise) as caught, mcp_errors():
        fn(*args)
    return caught.value.error.display()


def test_bearer_token_typed_calls(url, managers, monkeypatch):
    monkeypatch.setenv("SAGE_TEST_HTTP_TOKEN", TOKEN)
    events: list = []
    manager = managers({"Remote": {"url": url, "auth": "bearer", "token_env": "SAGE_TEST_HTTP_TOKEN",
                                   "timeout_ms": 1500}},
                       trace=lambda kind, data: events.append((kind, data)))
    assert call_typed(manager, "Remote", "Remote.p", "make_point", {"x": 5, "y": 6}, POINT) == \
        Record("Point", {"x": 5, "y": 6})
    assert call_typed(manager, "Remote", "Remote.e", "echo", {"text": "over http"}, STRING) == "over http"
    assert error_of(call_typed, manager, "Remote", "Remote.s", "slow", {"seconds": 20}, STRING) == \
        "MCP timeout: request 'tools/call' to 'Remote' timed out after 1500 ms"
    assert manager.safety("Remote", "echo") == "read_only"
    connect = next(data for kind, data in events if kind == "mcp.connect")
    assert connect["transport"] == "http" and connect["protocol"] == "2026-07-28"


def test_dynamic_http_with_headers_legacy(url, managers):
    manager = managers()
    config = {"url": url, "headers": {"Authorization": f"Bearer {TOKEN}"}, "protocol": "legacy"}
    h = manager.connect(json.dumps(config))
    assert manager.call(h, "add", '{"a": 2, "b": 2}') == "4"
    assert len(json.loads(manager.list_tools(h))) >= 23


def test_dollar_reference_inside_a_header_value(url, managers, monkeypatch):
    monkeypatch.setenv("SAGE_TEST_HTTP_TOKEN", TOKEN)
    manager = managers({"Remote": {"url": url, "headers": {"Authorization": "Bearer ${SAGE_TEST_HTTP_TOKEN}"}}})
    assert call_typed(manager, "Remote", "Remote.e", "echo", {"text": "expanded"}, STRING) == "expanded"
    monkeypatch.setenv("SAGE_TEST_HTTP_TOKEN", "wrong")
    manager = managers({"Remote": {"url": url, "headers": {"Authorization": "Bearer $SAGE_TEST_HTTP_TOKEN"}}})
    assert error_of(call_typed, manager, "Remote", "Remote.e", "echo", {"text": "x"}, STRING) == \
        "MCP auth error: server returned HTTP 401"


def test_wrong_token_is_an_auth_error(url, managers, monkeypatch):
    monkeypatch.setenv("SAGE_TEST_HTTP_TOKEN", "wrong")
    manager = managers({"Remote": {"url": url, "auth": "bearer", "token_env": "SAGE_TEST_HTTP_TOKEN"}})
    assert error_of(call_typed, manager, "Remote", "Remote.e", "echo", {"text": "x"}, STRING) == \
        "MCP auth error: server returned HTTP 401"


def test_unset_token_variable(url, managers, monkeypatch):
    monkeypatch.delenv("SAGE_TEST_HTTP_TOKEN", raising=False)
    manager = managers({"Remote": {"url": url, "auth": "bearer", "token_env": "SAGE_TEST_HTTP_TOKEN"}})
    assert error_of(call_typed, manager, "Remote", "Remote.e", "echo", {"text": "x"}, STRING) == \
        "MCP auth error: [tools.Remote] token_env refers to unset environment variable 'SAGE_TEST_HTTP_TOKEN'"


def test_nothing_listening(managers):
    manager = managers({"Gone": {"url": f"http://127.0.0.1:{free_port()}/mcp", "connect_timeout_ms": 3000}})
    assert error_of(call_typed, manager, "Gone", "Gone.e", "echo", {}, STRING).startswith("MCP connection failed: ")
