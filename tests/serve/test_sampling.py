"""`[serve] model = "client"` (SPEC §21): `divine` in a served run asks the calling client through
`sampling/createMessage`, answered here by the SDK client's sampling callback — plain and typed; a client
without sampling gets `LLM error: the calling client does not offer sampling`."""
from __future__ import annotations

import textwrap

import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import CreateMessageResult, TextContent

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


@pytest.mark.anyio
async def test_a_client_without_sampling(project, tmp_path):
    async with Client(stdio_client(params(project, tmp_path), errlog=open(tmp_path / "server.log", "w")),
                      mode="legacy", read_timeout_seconds=120) as client:
        result = await client.call_tool("colour", {"thing": "grass"})
        assert result.is_error and "LLM error: the calling client does not offer sampling" in result.content[0].text
