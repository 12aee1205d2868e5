"""Connections shared between the runs of one `sage serve` process (SPEC §20, §21): an `http` server of
`[tools.X]` (shared by default) is connected once and kept across runs, which never close it; a `stdio` one
(not shared by default) is connected by each run for itself, unless `shared = true`."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from sagepy.effects.world import stop_point
from sagepy.engine import Host
from sagepy.engine.program import compile
from sagepy.mcp.shared import shared_pool

from .helpers import REPO, SUITE, write_project

sys.path.insert(0, str(REPO / "tests" / "mcp"))
from mcp_helpers import start_http_suite  # noqa: E402

PROGRAM = textwrap.dedent("""\
    tool Web {
        fn echo(text: String) -> String
    }

    tool Local {
        fn echo(text: String) -> String
    }

    #[mcp_tool = "both"]
    agent Both {
        use Web, Local;
        on start {
            let w = try Web.echo("w");
            let l = try Local.echo("l");
            yield("{w} {l}");
        }
    }
    """)


@pytest.fixture
def http_suite(tmp_path):
    server, port = start_http_suite(str(tmp_path))
    yield f"http://127.0.0.1:{port}/mcp"
    server.terminate()
    server.wait(30)


@pytest.mark.parametrize("local_shared", [None, True])
def test_shared_connections(tmp_path, http_suite, local_shared):
    grove = (f'\n[tools.Web]\nurl = "{http_suite}"\n'
             f'\n[tools.Local]\ncommand = {json.dumps(sys.executable)}\n'
             f'args = [{json.dumps(SUITE)}, "--marker-dir", {json.dumps(str(tmp_path))}]\n'
             + ("shared = true\n" if local_shared else ""))
    program = compile(write_project(tmp_path / "p", PROGRAM, grove), require_run=False)
    settings = program.session.settings
    shared = shared_pool(settings.root, settings.tools.servers, settings.mcp, stop_point)
    try:
        assert sorted(shared.server_names) == (["Local", "Web"] if local_shared else ["Web"])
        connections = []
        for _ in range(2):
            lines: list[str] = []
            outcome = program.run(entry="Both", args={}, host=Host(mcp=shared, err=lines.append, out=lines.append))
            assert (outcome.status, outcome.value) == ("completed", "w l"), lines
            connections.append({name: slot.conn for name, slot in shared._servers.items()})
        assert connections[0]["Web"] is not None and connections[0]["Web"] is connections[1]["Web"]
        if local_shared:
            assert connections[0]["Local"] is connections[1]["Local"]
    finally:
        shared.close_all()
