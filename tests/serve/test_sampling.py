"""`[serve] model = "client"` (SPEC §21): `divine` in a served run asks the calling client through
`sampling/createMessage`, answered here by the SDK client's sampling callback — plain and typed, on the
handshake era and inside input-required results on the 2026-07-28 era; a `divine` with tools sends them to a
client that declared sampling with tools and runs the tool calls its model asks for; a client without sampling
gets `LLM error: the calling client does not offer sampling`, one without tools in sampling an LLM error too."""
from __future__ import annotations

import textwrap

import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import (CreateMessageResult, CreateMessageResultWithTools, SamplingCapability,
                       SamplingToolsCapability, TextContent, ToolResultContent, ToolUseContent)

from .helpers import environment, serve_command, write_project

PROGRAM = textwrap.dedent("""\
    record Verdict { label: String, score: Int }

    /// Name a colour.
    #[mcp_tool = "colour"]
    agent Colour {
        thing: String,
        on start {
            let said: String = try divine("What colour is {self.thing}? One word.");
            yield(said);
        }
    }

    /// Read a note with the host's model.
    #[mcp_tool = "note"]
    agent Note {
        use Fs;
        on start {
            let said = try divine("What does notes.txt say?", tools: [Fs.read]);
            yield(said);
        }
    }

    /// Judge a text.
    #[mcp_tool = "judge"]
    agent Judge {
        text: String,
        on start {
            let v = try divine("Judge: {self.text}" -> Verdict);
            yield(v);
        }
    }
    """)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("sampling") / "p", PROGRAM, '\n[serve]\nmodel = "client"\n')


def params(project, tmp_path) -> StdioServerParameters:
    command = serve_command(project)
    return StdioServerParameters(command=command[0], args=command[1:], env=environment(tmp_path))


@pytest.mark.anyio
async def test_divine_asks_the_client(project, tmp_path):
    seen: list = []

    async def on_sample(context, request):
        seen.append(request)
        text = request.messages[-1].content.text
        answer = "green" if "colour" in text else '{"label": "fine", "score": 7}'
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=answer),
                                   model="host-model", stop_reason="endTurn")

    async with Client(stdio_client(params(project, tmp_path), errlog=open(tmp_path / "server.log", "w")),
                      mode="legacy", sampling_callback=on_sample, read_timeout_seconds=120) as client:
        result = await client.call_tool("colour", {"thing": "grass"})
        assert (result.is_error, result.content[0].text) == (False, "green")
        assert seen[0].messages[0].content.text == "What colour is grass? One word."
        result = await client.call_tool("judge", {"text": "ok"})
        assert result.structured_content == {"result": {"label": "fine", "score": 7}}
        assert "JSON" in (seen[1].system_prompt or "")
        result = await client.call_tool("note", {})   # this client declared sampling without tools
        assert result.is_error
        assert "LLM error: the calling client does not offer sampling with tools" in result.content[0].text
        assert len(seen) == 2


@pytest.mark.anyio
async def test_a_client_without_sampling(project, tmp_path):
    async with Client(stdio_client(params(project, tmp_path), errlog=open(tmp_path / "server.log", "w")),
                      mode="legacy", read_timeout_seconds=120) as client:
        result = await client.call_tool("colour", {"thing": "grass"})
        assert result.is_error and "LLM error: the calling client does not offer sampling" in result.content[0].text


@pytest.mark.anyio
async def test_divine_with_tools_through_the_clients_model(project, tmp_path):
    (project / "notes.txt").write_text("buy milk")
    seen: list = []

    async def on_sample(context, request):
        seen.append(request)
        if len(seen) == 1:
            return CreateMessageResultWithTools(role="assistant", model="host-model", stop_reason="toolUse", content=[
                ToolUseContent(id="c1", name=request.tools[0].name, input={"path": "notes.txt"})])
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="it says buy milk"),
                                   model="host-model", stop_reason="endTurn")

    async with Client(stdio_client(params(project, tmp_path), errlog=open(tmp_path / "server.log", "w")),
                      sampling_callback=on_sample, read_timeout_seconds=120,
                      sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability())) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("note", {})
        assert (result.is_error, result.content[0].text) == (False, "it says buy milk")
        result = await client.call_tool("colour", {"thing": "grass"})   # plain sampling on the modern era
        assert (result.is_error, result.content[0].text) == (False, "it says buy milk")
    assert [t.name for t in seen[0].tools] == ["Fs__read"] and seen[0].tool_choice.mode == "auto"
    reply = seen[1].messages[-1].content
    assert isinstance(reply[0], ToolResultContent) and reply[0].tool_use_id == "c1"
    assert "buy milk" in reply[0].content[0].text
    assert isinstance(seen[1].messages[-2].content[0], ToolUseContent)

