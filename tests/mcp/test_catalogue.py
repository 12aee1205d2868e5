"""Resources, prompts, progress and server log messages (SPEC §8.11) through the MCP manager, on both
protocol eras, against the project's library server over real stdio (its resources and prompts come two
per page) and server-everything."""
from __future__ import annotations

import json
import os
import time
import sys

import pytest

from mcp_helpers import SERVERS, node_server

LIBRARY = os.path.join(SERVERS, "library.py")


def library_server(**keys) -> dict:
    return {"command": sys.executable, "args": [LIBRARY], **keys}
from sagepy.effects import wire
from sagepy.effects.wire import builtin_value
from sagepy.core.errors import SageRaise
from sagepy.effects.wire import mcp_errors


@pytest.fixture(scope="module")
def events():
    return []


@pytest.fixture(scope="module")
def manager(module_managers, events):
    return module_managers({"Library": library_server(timeout_ms=5000),
                            "LegacyLibrary": library_server(protocol="legacy")},
                           trace=lambda kind, data: events.append((kind, data)))


@pytest.fixture(scope="module", params=["Library", "LegacyLibrary", "handle"])
def server(request, manager):
    """A configured server on each era, and a dynamic handle."""
    if request.param != "handle":
        yield request.param
        return
    h = manager.connect(json.dumps({"command": sys.executable, "args": [LIBRARY], "name": "dynamic-library"}))
    yield h
    manager.disconnect(h)


def error_of(fn, *args) -> str:
    with pytest.raises(SageRaise) as caught, mcp_errors():
        fn(*args)
    error = caught.value.error
    assert error.kind == "Mcp" and error.display() == error.message
    return error.message


def test_resources_of_every_page(manager, server):
    listing = manager.resources(server)
    assert [item["uri"] for item in listing] == ["library://notes/readme", "library://notes/plain", "library://images/pixel"]
    records = builtin_value("mcp_resources", wire.resources_objects(listing))
    assert records[0].fields == {"uri": "library://notes/readme", "name": "readme", "description": "The readme.",
                                 "mime_type": "text/markdown"}
    assert records[1].fields["description"] == ""


def test_templates_and_prompts(manager, server):
    templates = builtin_value("mcp_resource_templates", wire.resource_templates_objects(manager.resource_templates(server)))
    assert [t.fields for t in templates] == [{"uri_template": "library://notes/{topic}", "name": "note",
                                              "description": "A note on a topic.", "mime_type": "text/plain"}]
    prompts = builtin_value("mcp_prompts", wire.prompts_objects(manager.prompts(server)))
    assert [p.fields["name"] for p in prompts] == ["review", "hello", "goodbye"]   # two pages
    assert prompts[0].fields == {"name": "review", "description": "Review some code.",
                                 "arguments": ["code", "language"], "required": ["code"]}


def test_read_resource(manager, server):
    assert manager.read_resource(server, "library://notes/readme") == "# Library\nA test server."
    assert manager.read_resource(server, "library://notes/sage") == "note on sage"   # from the template
    assert error_of(manager.read_resource, server, "library://images/pixel") == \
        "mcp_read_resource 'library://images/pixel' failed: binary content (image/png)"
    message = error_of(manager.read_resource, server, "library://nowhere")
    assert message.startswith("mcp_read_resource 'library://nowhere' failed: MCP protocol error: server ")
    assert "Unknown resource: library://nowhere" in message


def test_get_prompt(manager, server):
    text = manager.get_prompt(server, "review", '{"code": "x = 1", "language": "go"}')
    # the image message is skipped; messages are separated by a blank line
    assert text == "Review this go code:\nx = 1\n\nI will review it."
    assert manager.get_prompt(server, "hello", "{}") == "Say hello."
    assert error_of(manager.get_prompt, server, "review", '{"code": 1}') == \
        "invalid arguments JSON: prompt arguments are strings; 'code' is not"
    assert error_of(manager.get_prompt, server, "review", "[]") == "invalid arguments JSON: expected a JSON object"
    assert error_of(manager.get_prompt, server, "nope", "{}").startswith(
        "mcp_get_prompt 'nope' failed: MCP protocol error: ")


def test_unknown_servers_and_handles(manager):
    for name in ("Nope", "mcp:4242", "", "library "):
        assert error_of(manager.resources, name) == f"unknown MCP server or handle: {name}"
    assert manager.read_resource("library", "library://notes/plain") == "plain text"   # case-insensitive binding
    h = manager.connect(json.dumps({"command": sys.executable, "args": [LIBRARY]}))
    manager.disconnect(h)
    assert error_of(manager.prompts, h) == f"unknown MCP server or handle: {h}"


def test_progress_events(manager, events, server):
    events.clear()
    if server.startswith("mcp:"):
        assert manager.call(server, "count_rows", '{"rows": 3}') == "3 rows"
        name, tool = "dynamic-library", "count_rows"
    else:
        assert manager.call_typed(server, "Ledger.import_rows", "count_rows", {"rows": 3})["content"][0]["text"] \
            == "3 rows"
        name, tool = server, "Ledger.import_rows"
    progress = [data for kind, data in events if kind == "mcp.progress"]
    assert progress == [{"server": name, "tool": tool, "progress": float(n), "total": 3.0,
                         "message": f"{n} rows parsed"} for n in (1, 2, 3)]


def test_log_messages_go_to_the_server_log(manager, server):
    if server.startswith("mcp:"):
        manager.call(server, "chatty", "{}")
        log = os.path.join(manager.log_dir, "dynamic-library.log")
    else:
        manager.call_typed(server, "Library.chatty", "chatty", {})
        log = os.path.join(manager.log_dir, f"{server}.log")
    wanted = (" [info] library: an info message", " [warning] library: a warning message")
    deadline = time.monotonic() + 30   # the log lines are written as the notifications are handled, maybe
    while True:                        # just after the call's answer
        with open(log, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        if all(any(line.endswith(end) for line in lines) for end in wanted) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert any(line.endswith(wanted[0]) for line in lines)
    assert any(line.endswith(wanted[1]) for line in lines)


@pytest.mark.usefixtures("node_servers")
def test_server_everything(module_managers):
    manager = module_managers({"Everything": {"command": node_server("mcp-server-everything"), "args": ["stdio"]}})
    resources = manager.resources("Everything")
    assert len(resources) >= 7
    markdown = next(item for item in resources if item.get("mimeType") == "text/markdown")
    assert manager.read_resource("Everything", markdown["uri"]).startswith("#")
    prompts = {p.fields["name"]: p.fields for p in builtin_value("mcp_prompts", wire.prompts_objects(manager.prompts("Everything")))}
    assert prompts["args-prompt"]["arguments"] == ["city", "state"]
    assert prompts["args-prompt"]["required"] == ["city"]
    assert manager.get_prompt("Everything", "args-prompt", '{"city": "Paris", "state": "IDF"}') == \
        "What's weather in Paris, IDF?"
    assert len(manager.resource_templates("Everything")) >= 1
