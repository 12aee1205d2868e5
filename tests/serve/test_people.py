"""People through the calling client (SPEC §21): an approval and `ask` in a served run reach the client as
form elicitations answered by the SDK client's callback; a decline is a denial; a client without elicitation
gets §17.3's answer (a plain run: denied, no one to ask)."""
from __future__ import annotations

import textwrap

import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import ElicitResult

from .helpers import environment, serve_command, write_project

PROGRAM = textwrap.dedent("""\
    /// Publish a note (a person approves the write).
    #[mcp_tool = "publish"]
    agent Publish {
        text: String,
        use Fs;
        on start {
            try Fs.write("published.txt", self.text);
            yield("published");
        }
    }

    /// Ask a person for a name.
    #[mcp_tool = "greet"]
    agent Greet {
        on start {
            let name = try ask("Who is there?");
            yield("hello {name}");
        }
    }
    """)

GROVE = '\n[approvals]\nFs = "always"\ncalls = "all"\n'


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("people") / "p", PROGRAM, GROVE)


def params(project, tmp_path) -> StdioServerParameters:
    command = serve_command(project)
    return StdioServerParameters(command=command[0], args=command[1:], env=environment(tmp_path), cwd=str(project))


@pytest.mark.anyio
async def test_approvals_and_questions_are_elicitations(project, tmp_path):
    asked: list = []
    answers = [ElicitResult(action="accept", content={"approve": True}),
               ElicitResult(action="accept", content={"approve": False, "reason": "not today"}),
               ElicitResult(action="decline"),
               ElicitResult(action="accept", content={"answer": "Ada"}),
               ElicitResult(action="cancel")]

    async def on_elicit(context, request):
        asked.append((request.message, request.requested_schema))
        return answers.pop(0)

    async with Client(stdio_client(params(project, tmp_path), errlog=open(tmp_path / "server.log", "w")),
                      mode="legacy", elicitation_callback=on_elicit, read_timeout_seconds=120) as client:
        result = await client.call_tool("publish", {"text": "hello"})
        assert (result.is_error, result.content[0].text) == (False, "published")
        assert (project / "published.txt").read_text() == "hello"
        assert asked[0][0] == 'approve Fs.write {"path":"published.txt","content":"hello"} (asked by the program)?'
        assert asked[0][1]["properties"]["approve"]["type"] == "boolean"
        result = await client.call_tool("publish", {"text": "again"})
        assert result.is_error and "Fs.write was denied: not today" in result.content[0].text
        result = await client.call_tool("publish", {"text": "again"})
        assert result.is_error and "Fs.write was denied: the client answered decline" in result.content[0].text
        result = await client.call_tool("greet", {})
        assert result.content[0].text == "hello Ada"
        assert asked[3] == ("Who is there?", {"type": "object", "properties": {"answer": {
            "type": "string", "title": "Answer"}}, "required": ["answer"]})
        result = await client.call_tool("greet", {})
        assert result.is_error and "no answer: the client answered cancel" in result.content[0].text
    assert (project / "published.txt").read_text() == "hello"


@pytest.mark.anyio
async def test_a_client_without_elicitation_gets_no_one_to_ask(project, tmp_path):
    async with Client(stdio_client(params(project, tmp_path), errlog=open(tmp_path / "server.log", "w")),
                      mode="legacy", read_timeout_seconds=120) as client:
        result = await client.call_tool("publish", {"text": "x"})
        assert result.is_error
        assert "Fs.write was denied: no one could approve it (no terminal; a durable run would pause)" in \
            result.content[0].text
        result = await client.call_tool("greet", {})
        assert result.is_error and "no one to ask" in result.content[0].text
