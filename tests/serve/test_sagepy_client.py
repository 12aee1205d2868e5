"""sagepy as the client of `sage serve` (SPEC §21): a second project whose `[tools.Helpdesk]` starts (stdio) or
reaches (HTTP) the served example project, with its tool block written by `sage tools generate`, checked clean
by `sage check --verify-tools`, and run: the read-only agent answers; the approval-gated one asks the calling
sagepy (on the 2026-07-28 era both negotiate: an input-required result, answered on the retry), whose
elicitation policy declines, so the call is denied."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from .helpers import REPO, HttpServer, environment

EXAMPLE = REPO / "examples" / "served"

MAIN = textwrap.dedent("""\
    agent Main {
        use Helpdesk;
        on start {
            let answer = try Helpdesk.faq("invoice");
            print(join(answer.result.lines, "\\n"));
            let removed = Helpdesk.cleanup(0) catch(e) { print("cleanup: {e}"); [] };
            yield(len(removed));
        }
    }

    run Main;
    """)


def sage(*args: str, cwd, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=environment(tmp_path),
                          capture_output=True, text=True, timeout=300)


def caller(tmp_path, table: str):
    served = tmp_path / "served"
    shutil.copytree(EXAMPLE, served)
    root = tmp_path / "caller"
    root.mkdir()
    (root / "grove.toml").write_text('[project]\nname = "caller"\nentry = "main.sg"\n\n[mcp]\nelicitation = "decline"\n'
                                     "\n[tools.Helpdesk]\n"
                                     + table.format(served=json.dumps(str(served))))
    generated = sage("tools", "generate", "Helpdesk", cwd=root, tmp_path=tmp_path)
    assert generated.returncode == 0, generated.stderr
    assert "fn faq(word: String) -> FaqResult" in generated.stdout
    assert "[destructive]" in generated.stdout and "fn cleanup(days: Int) -> List<String>" in generated.stdout
    (root / "main.sg").write_text(generated.stdout + "\n" + MAIN)
    checked = sage("check", "--verify-tools", cwd=root, tmp_path=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "warning" not in checked.stderr
    return root, served


def expect_run(root, served, tmp_path) -> None:
    ran = sage("run", cwd=root, tmp_path=tmp_path)
    assert ran.returncode == 0, ran.stderr
    first, second = ran.stdout.splitlines()
    assert first == "Where are invoices? Invoices are under Settings > Billing > Invoices."
    assert second.startswith("cleanup: MCP tool error: ")
    assert "Shell.run was denied: the client answered decline" in second
    assert (served / "reports" / "old.tmp").exists()


def test_stdio(tmp_path):
    table = (f'command = {json.dumps(sys.executable)}\nargs = ["-m", "sagepy", "serve", {{served}}]\n'
             f'cwd = {{served}}\nenv = {{{{ PYTHONPATH = {json.dumps(str(REPO))} }}}}\n')
    root, served = caller(tmp_path, table)
    expect_run(root, served, tmp_path)


def test_streamable_http(tmp_path):
    served = tmp_path / "served-http"
    shutil.copytree(EXAMPLE, served)
    server = HttpServer(served, tmp_path)
    try:
        root, _ = caller(tmp_path, f"url = {json.dumps(server.url)}\n")
        expect_run(root, served, tmp_path)
    finally:
        server.stop()
