"""People through the client on the 2026-07-28 era (SPEC §21, SEP-2322): the SDK client in its default mode
negotiates 2026-07-28 with `sage serve`; an `ask` or an approval comes back as an input-required result, the
client's `call_tool` answers it with its elicitation callback and retries, and the retry continues the same run
(its side effect before the question happens once). A question of an MCP server the served run calls (§8.7)
reaches the calling client too, on both eras."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import ElicitResult

from .helpers import SUITE, HttpServer, environment, serve_command, write_project

PROGRAM = textwrap.dedent("""\
    tool Suite {
        fn ask(question: String) -> String
    }

    /// Publish a note (a person approves the write).
    #[mcp_tool = "publish"]
    agent Publish {
        text: String,
        use Fs;
        on start {
            try append_file("started.txt", "publish\\n");
            try Fs.write("published.txt", self.text);
            yield("published");
        }
    }

    /// Ask a person for a name.
    #[mcp_tool = "greet"]
    agent Greet {
        on start {
            try append_file("started.txt", "greet\\n");
            print("asking");
            let name = try ask("Who is there?");
            yield("hello {name}");
        }
    }

    /// Ask through an MCP server that asks its own question.
    #[mcp_tool = "relay"]
    agent Relay {
        use Suite;
        on start {
            let said = try Suite.ask("Proceed?");
            yield(said);
        }
    }
    """)

GROVE = ('\n[approvals]\nFs = "always"\ncalls = "all"\n'
         f'\n[tools.Suite]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SUITE)}]\n')


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "p", PROGRAM, GROVE)


def answering(asked: list, answers: list):
    async def on_elicit(context, request):
        asked.append(request.message)
        return answers.pop(0)
    return on_elicit


@pytest.mark.anyio
async def test_questions_over_stdio_on_the_modern_era(project, tmp_path):
    asked: list = []
    answers = [ElicitResult(action="accept", content={"answer": "Ada"}),
               ElicitResult(action="accept", content={"approve": True}),
               ElicitResult(action="decline"),
               ElicitResult(action="accept", content={"ok": True, "reason": "fine"})]
    command = serve_command(project)
    params = StdioServerParameters(command=command[0], args=command[1:], env=environment(tmp_path))
    logged: list = []

    async def on_log(params):
        logged.append(params.data)

    async with Client(stdio_client(params, errlog=open(tmp_path / "server.log", "w")), read_timeout_seconds=120,
                      elicitation_callback=answering(asked, answers), logging_callback=on_log,
                      log_level="info") as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("greet", {})
        assert (result.is_error, result.content[0].text) == (False, "hello Ada")
        result = await client.call_tool("publish", {"text": "hello"})
        assert (result.is_error, result.content[0].text) == (False, "published")
        result = await client.call_tool("publish", {"text": "again"})
        assert result.is_error and "Fs.write was denied: the client answered decline" in result.content[0].text
        result = await client.call_tool("relay", {})
        assert (result.is_error, result.content[0].text) == (False, "accepted ok=True reason=fine")
    assert asked == ["Who is there?",
                     'approve Fs.write {"path":"published.txt","content":"hello"} (asked by the program)?',
                     'approve Fs.write {"path":"published.txt","content":"again"} (asked by the program)?',
                     "Proceed?"]
    assert (project / "started.txt").read_text() == "greet\npublish\npublish\n"   # each run started once
    assert (project / "published.txt").read_text() == "hello"
    assert logged.count("asking") == 1
    log = (tmp_path / "server.log").read_text()
    assert "passing a question of MCP server 'Suite' to the client" in log


@pytest.mark.anyio
async def test_questions_over_http_on_both_eras(project, tmp_path):
    server = HttpServer(project, tmp_path)
    asked: list = []
    answers = [ElicitResult(action="accept", content={"answer": "Bo"}),
               ElicitResult(action="accept", content={"ok": False})]
    try:
        async with Client(server.url, read_timeout_seconds=120,
                          elicitation_callback=answering(asked, answers)) as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("greet", {})
            assert result.content[0].text == "hello Bo"
        async with Client(server.url, mode="legacy", read_timeout_seconds=120,
                          elicitation_callback=answering(asked, answers)) as client:
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("relay", {})
            assert result.content[0].text == "accepted ok=False reason="
        assert asked == ["Who is there?", "Proceed?"]
        assert (project / "started.txt").read_text() == "greet\n"
    finally:
        server.stop()
