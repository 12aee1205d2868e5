"""`sage tools import` and `sage tools add` (SPEC §10.2): host configs (Claude Desktop / Cursor / Windsurf
`mcpServers`, VS Code `servers`) from real files into grove.toml, whose existing text is kept byte for byte,
and `--generate` against the real servers they name."""
from __future__ import annotations

import json
import sys

import pytest

from tools_cli_helpers import SUITE, node_tool, python_tool, run_sage, sage_process, write

GROVE = '# my project\n[project]\nname = "demo"   # keep me\n\n[tools.time]\ncommand = "mcp-server-time"\n'


@pytest.mark.usefixtures("node_servers")
def test_import_a_claude_desktop_config_and_generate(tmp_path, capsys, monkeypatch):
    root = tmp_path / "proj"
    write(root / "grove.toml", GROVE)
    write(root / "data" / "hello.txt", "hello from disk\n")
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "filesystem": {"command": node_tool("mcp-server-filesystem"), "args": ["${env:SAGE_IMPORT_DATA}"]},
        "everything": {"command": node_tool("mcp-server-everything"), "args": ["stdio"],
                       "env": {"TOKEN": "${SAGE_IMPORT_TOKEN}", "MIXED": "a $SAGE_IMPORT_TOKEN b"}},
        "Time": {"command": python_tool("mcp-server-time")},
        "remote-api": {"url": "https://example.invalid/mcp",
                       "headers": {"Authorization": "Bearer ${SAGE_IMPORT_UNSET}"}},
        "old-sse": {"url": "https://example.invalid/sse"},
        "off": {"command": "x", "disabled": True},
    }}))
    monkeypatch.setenv("SAGE_IMPORT_DATA", str(root / "data"))
    monkeypatch.setenv("SAGE_IMPORT_TOKEN", "t0k")
    monkeypatch.delenv("SAGE_IMPORT_UNSET", raising=False)
    code, out, err = run_sage(capsys, monkeypatch, root, "tools", "import", str(config), "--generate", "src/tools")
    assert code == 0
    assert out.splitlines() == [
        f"added [tools.Filesystem] {node_tool('mcp-server-filesystem')} '$SAGE_IMPORT_DATA'",
        f"added [tools.Everything] {node_tool('mcp-server-everything')} stdio",
        "added [tools.RemoteApi] https://example.invalid/mcp",
        "wrote src/tools/filesystem.sg",
        "wrote src/tools/everything.sg",
    ]
    where = f"({config})"
    assert f"skipped 'Time' {where}: [tools.time] already exists\n" in err
    assert f"skipped 'old-sse' {where}: it uses the SSE transport, which sagepy does not support\n" in err
    assert f"skipped 'off' {where}: it is disabled\n" in err
    assert ("✗ RemoteApi — MCP config error: [tools.RemoteApi.headers] Authorization refers to unset environment "
            "variable 'SAGE_IMPORT_UNSET' (no declarations written)\n") in err
    text = (root / "grove.toml").read_text()
    assert text.startswith(GROVE + "\n[tools.Filesystem]\n")
    assert '[tools.Everything.env]\nTOKEN = "$SAGE_IMPORT_TOKEN"\nMIXED = "a $SAGE_IMPORT_TOKEN b"\n' in text
    assert '[tools.RemoteApi.headers]\nAuthorization = "Bearer $SAGE_IMPORT_UNSET"\n' in text
    assert "pub tool Filesystem {" in (root / "src" / "tools" / "filesystem.sg").read_text()
    assert "pub tool Everything {" in (root / "src" / "tools" / "everything.sg").read_text()
    # The imported table works: the `$` reference in args reaches the server.
    code, out, err = run_sage(capsys, monkeypatch, root, "tools", "call", "Filesystem.read_text_file",
                              f"path={root / 'data' / 'hello.txt'}")
    assert (code, out, err) == (0, "hello from disk\n", "")
    # Importing again adds nothing and leaves the file alone.
    code, out, err = run_sage(capsys, monkeypatch, root, "tools", "import", str(config))
    assert (code, out) == (0, "nothing to add\n") and (root / "grove.toml").read_text() == text


def test_generated_declarations_check(tmp_path):
    root = tmp_path / "proj"
    write(root / "grove.toml", "")
    config = write(tmp_path / "mcp.json", json.dumps({"mcpServers": {"sage-suite": {
        "command": sys.executable, "args": [SUITE]}}}))
    r = sage_process(root, "tools", "import", str(config), "--generate", "src")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.splitlines()[-1] == "wrote src/sage_suite.sg"
    write(root / "src" / "main.sg", '''
        mod sage_suite;
        use sage_suite::SageSuite;
        agent Main {
            use SageSuite
            on start { print(try SageSuite.add(2, 3)); yield(0); }
        }
        run Main;
    ''')
    r = sage_process(root, "check")
    assert r.returncode == 0, r.stderr
    r = sage_process(root, "run")
    assert (r.returncode, r.stdout) == (0, "5\n"), r.stderr


def test_import_a_vscode_config_from_the_project(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    root = tmp_path / "proj"
    write(root / "grove.toml", "[project]\nname = \"x\"")   # no final newline
    write(root / ".vscode" / "mcp.json", '''
        // VS Code allows comments and trailing commas
        {
          "inputs": [{"type": "promptString", "id": "api-key", "password": true}],
          "servers": {
            "github": {"type": "http", "url": "https://example.invalid/mcp/",
                       "headers": {"Authorization": "Bearer ${input:api-key}"},},
            "local": {"type": "stdio", "command": "python3", "args": ["${workspaceFolder}/srv.py", "${userHome}/x"],
                      "env": {"A": "${env:HOME}"}},
          },
        }
    ''')
    code, out, err = run_sage(capsys, monkeypatch, root, "tools", "import")
    assert code == 0
    assert out == "added [tools.Github] https://example.invalid/mcp/\nadded [tools.Local] python3 " \
                  f"{root}/srv.py '$HOME/x'\n"
    assert err == "note: [tools.Github] reads API_KEY from the environment (it was an input prompt of the host)\n"
    assert (root / "grove.toml").read_text() == (
        '[project]\nname = "x"\n\n[tools.Github]\nurl = "https://example.invalid/mcp/"\n\n'
        '[tools.Github.headers]\nAuthorization = "Bearer $API_KEY"\n\n[tools.Local]\ncommand = "python3"\n'
        f'args = ["{root}/srv.py", "$HOME/x"]\n\n[tools.Local.env]\nA = "$HOME"\n')


def test_import_from_the_hosts_usual_locations(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    here = tmp_path / "here"
    here.mkdir()
    code, out, err = run_sage(capsys, monkeypatch, here, "tools", "import")
    assert code == 1 and out == ""
    assert err.startswith(f"error: no MCP config found; looked in:\n  {here}/.vscode/mcp.json\n")
    assert f"  {home}/.codeium/windsurf/mcp_config.json\n" in err
    claude = ("Library/Application Support/Claude" if sys.platform == "darwin" else ".config/Claude")
    write(home / claude / "claude_desktop_config.json", '{"mcpServers": {"a": {"command": "srv-a"}}}')
    write(home / ".cursor" / "mcp.json", '{"mcpServers": {"b": {"url": "http://127.0.0.1:9/mcp"}}}')
    write(home / ".codeium" / "windsurf" / "mcp_config.json",
          '{"mcpServers": {"c": {"serverUrl": "http://127.0.0.1:8/mcp"}, "A": {"command": "dup"}}}')
    code, out, err = run_sage(capsys, monkeypatch, here, "tools", "import")
    assert (code, out) == (0, "added [tools.A] srv-a\nadded [tools.B] http://127.0.0.1:9/mcp\n"
                              "added [tools.C] http://127.0.0.1:8/mcp\n")
    assert "skipped 'A' (" in err and "[tools.A] already exists" in err
    # Outside a project, grove.toml is created in the current directory, and is a valid project file.
    assert run_sage(capsys, monkeypatch, here, "tools", "list")[0] == 0


def test_add_stdio_and_http(tmp_path, capsys, monkeypatch):
    write(tmp_path / "grove.toml", GROVE)
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "add", "Suite", "--env", "K=$SECRET", "--",
                    sys.executable, SUITE, "--marker-dir", ".") == \
        (0, f"added [tools.Suite] {sys.executable} {SUITE} --marker-dir .\n", "")
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "add", "Api", "--url", "http://127.0.0.1:9/mcp",
                    "--header", "Authorization=Bearer $TOK") == (0, "added [tools.Api] http://127.0.0.1:9/mcp\n", "")
    assert (tmp_path / "grove.toml").read_text() == GROVE + (
        f'\n[tools.Suite]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SUITE)}, "--marker-dir", "."]\n\n'
        '[tools.Suite.env]\nK = "$SECRET"\n\n[tools.Api]\nurl = "http://127.0.0.1:9/mcp"\n\n'
        '[tools.Api.headers]\nAuthorization = "Bearer $TOK"\n')
    monkeypatch.setenv("SECRET", "s")
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "call", "Suite.add", "a=1", "b=2") == (0, "3\n", "")
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "add", "TIME", "--", "x") == \
        (1, "", "error: [tools.time] already exists in grove.toml\n")
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "add", "X")
    assert code == 2 and err.endswith("sage tools add: error: give either -- CMD ARGS… or --url URL\n")
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "add", "X", "--url", "http://h/", "--env", "A=1")
    assert code == 2 and err.endswith("sage tools add: error: --env applies to stdio servers only\n")


def test_a_broken_grove_toml_is_not_touched(tmp_path, capsys, monkeypatch):
    write(tmp_path / "grove.toml", "[project\n")
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "add", "X", "--", "cmd")
    assert (code, err) == (1, "error: grove.toml is not valid TOML; fix it first (sage check shows where)\n")
    assert (tmp_path / "grove.toml").read_text() == "[project\n"
