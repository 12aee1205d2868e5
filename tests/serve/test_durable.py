"""Served calls in a project with `[persistence]` are durable runs (SPEC §21, §14): the run id is in the result's
`_meta` as `sage/run_id`; a run whose approval no one can give here (a client without elicitation) pauses, the
result says `paused: …` with `isError: true`, and the run is answered with `sage runs approve` and resumed."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from mcp import Client, StdioServerParameters, stdio_client

from .helpers import environment, serve_command, write_project

PROGRAM = textwrap.dedent("""\
    #[mcp_tool = "count"]
    agent Count {
        @persistent n: Int,
        on start {
            self.n.set(self.n.get() + 1);
            yield(self.n.get());
        }
    }

    #[mcp_tool = "publish"]
    agent Publish {
        text: String,
        use Fs;
        on start {
            try Fs.write("published.txt", self.text);
            yield("published");
        }
    }
    """)

GROVE = '\n[persistence]\npath = ".sage/state.db"\n\n[approvals]\nFs = "always"\ncalls = "all"\n'


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_durable_calls(tmp_path):
    project = write_project(tmp_path / "p", PROGRAM, GROVE)
    command = serve_command(project)
    params = StdioServerParameters(command=command[0], args=command[1:], env=environment(tmp_path))
    async with Client(stdio_client(params, errlog=open(tmp_path / "server.log", "w")), mode="legacy",
                      read_timeout_seconds=120) as client:
        first = await client.call_tool("count", {})
        second = await client.call_tool("count", {})
        assert (first.structured_content, second.structured_content) == ({"result": 1}, {"result": 2})
        ids = [first.meta["sage/run_id"], second.meta["sage/run_id"]]
        assert ids[0] != ids[1]
        paused = await client.call_tool("publish", {"text": "hello"})
        assert paused.is_error
        assert paused.content[0].text.startswith("paused: Fs.write ")
        assert "needs approval" in paused.content[0].text
        run_id = paused.meta["sage/run_id"]
    shown = subprocess.run([sys.executable, "-m", "sagepy", "runs", "show", run_id], cwd=project,
                           env=environment(tmp_path), capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "paused" in shown.stdout and "waiting" in shown.stdout
