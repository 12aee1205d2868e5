"""Dynamic MCP (SPEC §8.5), pagination and list changes (§8.3, §8.8) and elicitation (§8.7), on both
protocol eras, against the project's own server over real stdio."""
from __future__ import annotations

import io
import json
import sys
import time

import pytest

from mcp_helpers import SUITE, call_typed, suite_server
from sagepy.mcp.elicitation import (CANCEL, DECLINE, ElicitationAnswer, ElicitationRefused,
                                    TerminalElicitation)
from sagepy.core.errors import SageRaise
from sagepy.effects.wire import mcp_errors
from sagepy.effects.wire import builtin_value, tool_objects
from sagepy.core.values import Record


class Resolver:
    """An elicitation resolver that answers from a queue and remembers what it was asked."""

    def __init__(self) -> None:
        self.answers: list = []
        self.requests: list = []

    def __call__(self, server, request):
        self.requests.append((server, request))
        answer = self.answers.pop(0) if self.answers else DECLINE
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer()
        return answer


@pytest.fixture(scope="module")
def dyn(module_managers):
    resolver = Resolver()
    events: list = []
    manager = module_managers(elicitation=resolver, trace=lambda kind, data: events.append((kind, data)))
    manager.resolver = resolver
    manager.events = events
    return manager


@pytest.fixture(scope="module", params=["2026-07-28", "2025-11-25"])
def handle(request, dyn):
    """One connection per protocol era: auto negotiates 2026-07-28, legacy forces the handshake."""
    config = {"command": sys.executable, "args": [SUITE], "name": f"suite-{request.param}", "timeout_ms": 1500}
    if request.param != "2026-07-28":
        config["protocol"] = "legacy"
    h = dyn.connect(json.dumps(config))
    yield h
    dyn.disconnect(h)


def dyn_error(fn, *args) -> str:
    with pytest.raises(SageRaise) as caught, mcp_errors():
        fn(*args)
    error = caught.value.error
    assert error.kind == "Mcp" and error.display() == error.message
    return error.message


def test_all_pages_are_listed(dyn, handle):
    listing = json.loads(dyn.list_tools(handle))
    names = [tool["name"] for tool in listing]
    assert len(names) >= 23 and names[:3] == ["echo", "add", "make_point"]
    echo = listing[0]
    assert echo["inputSchema"]["properties"]["text"]["type"] == "string"
    assert echo["annotations"] == {"readOnlyHint": True, "idempotentHint": False}
    assert echo["safety"] == "read_only"
    assert "outputSchema" in echo and "title" not in echo


def test_typed_tool_records(dyn, handle):
    tools = builtin_value("mcp_tools", tool_objects(dyn.listing(handle)))
    assert all(isinstance(t, Record) and t.name == "McpTool" for t in tools)
    add = next(t for t in tools if t.fields["name"] == "add")
    assert add.fields["safety"] == "idempotent"
    assert json.loads(add.fields["input_schema"])["required"] == ["a", "b"]
    filler = next(t for t in tools if t.fields["name"] == "filler_00")
    assert filler.fields["description"] == "" and filler.fields["safety"] == "destructive"


def test_server_info_and_connection(dyn, handle):
    assert dyn.server_info(handle) == {"name": "sage-suite", "version": "1.2.3"}
    n = int(handle.split(":")[1])
    assert dyn.connection(handle) == n
    assert dyn.connection("mcp:9999") is None and dyn.connection("nonsense") is None


def test_calls(dyn, handle):
    assert dyn.call(handle, "echo", '{"text": "hi"}') == "hi"
    assert json.loads(dyn.call(handle, "make_point", '{"x": 1, "y": 2}')) == {"x": 1, "y": 2}
    assert dyn.call(handle, "two_texts", "{}") == "first\nsecond"
    assert dyn_error(dyn.call, handle, "refuse", '{"reason": "no"}') == \
        "mcp_call 'refuse' failed: MCP tool error: Error executing tool refuse: no"
    assert dyn_error(dyn.call, handle, "echo", "[1]") == "invalid arguments JSON: expected a JSON object"
    assert dyn_error(dyn.call, handle, "echo", "{").startswith("invalid arguments JSON: ")
    assert dyn_error(dyn.call, handle, "slow", '{"seconds": 10}') == \
        f"mcp_call 'slow' failed: MCP timeout: request 'tools/call' to 'suite-{handle_era(dyn, handle)}' " \
        "timed out after 1500 ms"


def handle_era(dyn, handle) -> str:
    return dyn._slot(handle).conn.protocol


def test_list_changed(dyn, handle):
    before = {t["name"] for t in dyn.listing(handle)}
    n = int(dyn.call(handle, "grow", "{}"))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        after = {t["name"] for t in dyn.listing(handle)}
        if f"extra_{n}" in after:
            break
        time.sleep(0.05)
    assert after - before == {f"extra_{n}"}
    label = dyn._slot(handle).label
    assert ("mcp.tools_changed", {"server": label}) in dyn.events
    assert dyn.call(handle, f"extra_{n}", "{}") == f"extra {n}"


def test_elicitation_answers(dyn, handle):
    dyn.resolver.answers[:] = [ElicitationAnswer("accept", {"ok": True, "reason": "sure"}), DECLINE, CANCEL]
    assert dyn.call(handle, "ask", '{"question": "Proceed?"}') == "accepted ok=True reason=sure"
    assert dyn.call(handle, "ask", '{"question": "Proceed?"}') == "decline"
    assert dyn.call(handle, "ask", '{"question": "Proceed?"}') == "cancel"
    server, request = dyn.resolver.requests[-1]
    assert server == request.server and request.mode == "form" and request.message == "Proceed?"
    assert request.schema["required"] == ["ok"] and request.setting == "auto"
    assert ("mcp.elicit", {"server": server, "mode": "form", "action": "cancel", "policy": "auto"}) in dyn.events


def test_elicitation_error_answer(dyn, handle):
    dyn.resolver.answers[:] = [ElicitationRefused("no forms today")]
    message = dyn_error(dyn.call, handle, "ask", '{"question": "Proceed?"}')
    assert message.startswith("mcp_call 'ask' failed: MCP ")
    assert "no forms today" in message


def test_timer_pauses_while_a_form_is_open(dyn, handle):
    def slow_user():
        time.sleep(2.5)  # longer than the connection's timeout_ms of 1500
        return ElicitationAnswer("accept", {"ok": False})

    dyn.resolver.answers[:] = [slow_user]
    assert dyn.call(handle, "ask", '{"question": "Take your time"}') == "accepted ok=False reason="


def test_terminal_form_against_a_real_server(dyn, handle):
    stdin = io.StringIO("x\na\nmaybe\ny\n\n")
    stderr = io.StringIO()
    form = TerminalElicitation(stdin=stdin, stderr=stderr, interactive=True)
    dyn.resolver.answers[:] = [lambda: form(*dyn.resolver.requests[-1])]
    dyn.resolver.requests.clear()
    assert dyn.call(handle, "ask", '{"question": "Deploy now?"}') == "accepted ok=True reason="
    shown = stderr.getvalue()
    assert "asks: Deploy now?" in shown and "Ok (required)" in shown and "answer yes or no" in shown


def test_terminal_form_declines_without_a_terminal():
    from sagepy.mcp.elicitation import ElicitationRequest
    request = ElicitationRequest("S", "form", "Go?", {"properties": {}}, None, "auto")
    assert TerminalElicitation(stdin=io.StringIO("a\n"), stderr=io.StringIO())("S", request).action == "decline"
    request.setting = "prompt"
    assert TerminalElicitation(stdin=io.StringIO(""), stderr=io.StringIO())("S", request).action == "cancel"


def test_no_resolver_declines(managers):
    manager = managers()
    h = manager.connect(json.dumps({"command": sys.executable, "args": [SUITE], "protocol": "legacy"}))
    assert manager.call(h, "ask", '{"question": "?"}') == "decline"


def test_pagination_that_never_ends(managers):
    manager = managers()
    config = {"command": sys.executable, "args": [SUITE, "--pages-loop"]}
    assert dyn_error(manager.connect, json.dumps(config)) == \
        "MCP connection failed: MCP protocol error: tools/list pagination did not terminate"


def test_connect_errors(managers, monkeypatch):
    manager = managers()
    monkeypatch.delenv("SAGE_SURELY_UNSET", raising=False)
    cases = {
        "[]": "invalid MCP config: expected a JSON object",
        "{": "invalid MCP config: not valid JSON: Expecting property name enclosed in double quotes at line 1 "
             "column 2",
        '{"comand": "x"}': "invalid MCP config: unknown key `comand` in [mcp_connect] (did you mean `command`?)",
        '{"command": "x", "timeout_ms": -1}':
            "invalid MCP config: [mcp_connect] timeout_ms must be a positive integer, found -1",
        '{"command": "x", "env": {"T": "$SAGE_SURELY_UNSET"}}':
            "invalid MCP config: [mcp_connect.env] T refers to unset environment variable 'SAGE_SURELY_UNSET'",
        '{"command": "sage-no-such-server"}':
            "MCP connection failed: cannot start 'sage-no-such-server': command not found",
    }
    for config, expected in cases.items():
        assert dyn_error(manager.connect, config) == expected
    for fn in (manager.list_tools, manager.listing, manager.server_info, manager.disconnect):
        assert dyn_error(fn, "mcp:424242") == "unknown MCP handle: mcp:424242"
    assert dyn_error(manager.call, "bogus", "t", "{}") == "unknown MCP handle: bogus"


def test_disconnect_and_handle_numbers(managers, tmp_path):
    events: list = []
    manager = managers(trace=lambda kind, data: events.append((kind, data)))
    h = manager.connect(json.dumps(suite_server(protocol="legacy")))
    n = int(h.split(":")[1])
    assert n >= 1
    manager.disconnect(h)
    assert manager.connection(h) is None
    assert ("mcp.disconnect", {"server": h}) in events
    assert dyn_error(manager.call, h, "echo", "{}") == f"unknown MCP handle: {h}"
    assert (tmp_path / ".sage" / "logs" / f"mcp-{n}.log").exists()


def test_inprocess_server(managers):
    manager = managers({"Local": {"module": SUITE, "timeout_ms": 5000}})
    from mcp_helpers import POINT
    assert call_typed(manager, "Local", "Local.p", "make_point", {"x": 7, "y": 8}, POINT) == \
        Record("Point", {"x": 7, "y": 8})
    h = manager.connect(json.dumps({"module": SUITE, "name": "local"}))
    assert manager.call(h, "echo", '{"text": "in process"}') == "in process"
