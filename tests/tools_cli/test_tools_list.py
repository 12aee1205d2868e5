"""`sage tools list` (SPEC §10.2): grove.toml only, no server is contacted."""
from __future__ import annotations

from tools_cli_helpers import run_sage, write


def test_list_aligns_columns_and_masks_secrets(tmp_path, capsys, monkeypatch):
    write(tmp_path / "grove.toml", '''
        [tools.Tracker]
        command = "tracker-server"
        args = ["--token", "s3cret", "--api-key=k3y", "--verbose", "PASSWORD=hunter2", "plain", "two words"]
        env = { TRACKER_TOKEN = "literal-secret" }
        headers = { X = "y" }

        [tools.Calendar]
        url = "https://user:pa55@cal.example.com/mcp?api_key=abc&region=eu"
        auth = "bearer"
        token_env = "CAL_TOKEN"
        headers = { Authorization = "Bearer literal-token" }

        [tools.Local]
        module = "srv.py"
    ''')
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "list")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Tracker   stdio      none    tracker-server --token **** --api-key=**** --verbose PASSWORD=**** plain "
        "'two words'",
        "Calendar  http       bearer  https://user:****@cal.example.com/mcp?api_key=****&region=eu",
        "Local     inprocess  none    srv.py (object server)",
    ]
    for secret in ("s3cret", "k3y", "hunter2", "pa55", "abc", "literal-secret", "literal-token"):
        assert secret not in out


def test_list_without_tools(tmp_path, capsys, monkeypatch):
    write(tmp_path / "grove.toml", '[project]\nname = "x"\n')
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "list") == (0, "no MCP tools configured\n", "")


def test_list_reports_invalid_entries(tmp_path, capsys, monkeypatch):
    write(tmp_path / "grove.toml", '[tools.Good]\ncommand = "srv"\n\n[tools.Bad]\ncomand = "srv"\n')
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "list")
    assert code == 1
    assert out.startswith("Good  stdio  none  srv")
    assert "error[E090]: grove.toml: unknown key `comand` in [tools.Bad]" in err
    assert "did you mean `command`?" in err


def test_tools_usage_errors(tmp_path, capsys, monkeypatch):
    write(tmp_path / "grove.toml", '[tools.Good]\ncommand = "srv"\n')
    assert run_sage(capsys, monkeypatch, tmp_path, "tools")[0] == 2
    code, _out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect")
    assert code == 2 and "give exactly one of NAME, --stdio CMD or --http URL" in err
    code, _out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "Good", "--stdio", "x")
    assert code == 2
    code, _out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "--stdio", "x", "--env", "NOEQ")
    assert code == 2 and "--env expects K=V, got 'NOEQ'" in err
    code, _out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "frob")
    assert code == 2


def test_inspect_unknown_name_and_unstartable_server(tmp_path, capsys, monkeypatch):
    write(tmp_path / "grove.toml", '[tools.Gone]\ncommand = "/nonexistent/mcp-server"\n')
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "Nope")
    assert (code, out, err) == (1, "", "error: no [tools.Nope] entry in grove.toml (configured: Gone)\n")
    write(tmp_path / "grove.toml",
          '[tools.Gone]\ncommand = "/nonexistent/mcp-server"\n[tools.Alpha]\nurl = "http://127.0.0.1:1/mcp"\n')
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "Nope")
    assert (code, out, err) == (1, "", "error: no [tools.Nope] entry in grove.toml (configured: Alpha, Gone)\n")
    write(tmp_path / "grove.toml", "")
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "Nope")
    assert (code, out, err) == (1, "", "error: no [tools.Nope] entry in grove.toml (configured: none)\n")
    write(tmp_path / "grove.toml", '[tools.Gone]\ncommand = "/nonexistent/mcp-server"\n')
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "gone")  # binds ignoring case
    assert (code, out) == (1, "")
    assert err == "error: MCP connection failed: cannot start '/nonexistent/mcp-server': command not found\n"
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "generate", "--stdio", "/nonexistent/x y")
    assert (code, out) == (1, "")
    assert err == "error: MCP connection failed: cannot start '/nonexistent/x': command not found\n"
