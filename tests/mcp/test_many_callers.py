"""Hundreds of agents calling one MCP server at once (issue 32): over streamable HTTP (one shared connection)
and over stdio, every call gets its answer."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_helpers import SUITE, start_http_suite

REPO = Path(__file__).resolve().parent.parent.parent

CALLERS = """\
tool Calc {
    fn add(a: Int, b: Int) -> Int
}

agent Caller {
    use Calc
    n: Int

    on start {
        let total = 0;
        for i in range(0, CALLS) {
            total = total + (try Calc.add(self.n, i));
        }
        yield(total);
    }
}

agent Main {
    on start {
        let callers = [];
        for i in range(0, AGENTS) {
            callers = push(callers, summon Caller { n: i });
        }
        let total = 0;
        let failed = 0;
        for c in callers {
            total = total + (await c catch(e) { failed = failed + 1; print_err("{e}"); 0 });
        }
        print("total {total} failed {failed}");
    }
}

run Main;
"""


def run_callers(tmp_path: Path, tool_table: str, agents: int, calls: int) -> None:
    (tmp_path / "grove.toml").write_text(f'[project]\nname = "many"\nentry = "main.sg"\n\n{tool_table}',
                                         encoding="utf-8")
    program = CALLERS.replace("AGENTS", str(agents)).replace("CALLS", str(calls))
    (tmp_path / "main.sg").write_text(program, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(NO_COLOR="1", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    total = sum(n * calls + calls * (calls - 1) // 2 for n in range(agents))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"total {total} failed 0\n", "")


def test_three_hundred_agents_share_one_http_connection(tmp_path: Path) -> None:
    server, port = start_http_suite(str(tmp_path))
    try:
        run_callers(tmp_path, f'[tools.Calc]\nurl = "http://127.0.0.1:{port}/mcp"\n', 300, 2)
    finally:
        server.kill()
        server.wait(10)


def test_three_hundred_agents_share_one_stdio_server(tmp_path: Path) -> None:
    table = f'[tools.Calc]\ncommand = "{sys.executable}"\nargs = ["{SUITE}", "--marker-dir", "{tmp_path}"]\n'
    run_callers(tmp_path, table, 300, 2)

