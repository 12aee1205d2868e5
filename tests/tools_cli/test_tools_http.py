"""`sage tools inspect --http URL --header K=V` against the suite server over Streamable HTTP with a bearer
token (SPEC §8.2, §10.2)."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from tools_cli_helpers import SUITE, run_sage

TOKEN = "t0ken-for-tools"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    where = str(tmp_path_factory.mktemp("http"))
    server = subprocess.Popen([sys.executable, SUITE, "--http", str(port), "--token", TOKEN, "--marker-dir", where],
                              cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(10)


def test_inspect_http_with_header(url, tmp_path, capsys, monkeypatch):
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "--http", url,
                              "--header", f"Authorization=Bearer {TOKEN}")
    assert (code, err) == (0, "")
    assert out.startswith("server: sage-suite 1.2.3 (protocol 2026-07-28, http)\n")
    assert "tools (23):\n" in out


def test_inspect_http_without_token(url, tmp_path, capsys, monkeypatch):
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "--http", url)
    assert (code, out, err) == (1, "", "error: MCP auth error: server returned HTTP 401\n")


def test_call_over_http(url, tmp_path, capsys, monkeypatch):
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "call", "--http", url, "--header",
                    f"Authorization=Bearer {TOKEN}", "add", "a=20", "b=22") == (0, "42\n", "")
    # A configured server whose header holds a `$` reference inside the value.
    monkeypatch.setenv("SAGE_HTTP_CALL_TOKEN", TOKEN)
    (tmp_path / "grove.toml").write_text(f'[tools.Remote]\nurl = "{url}"\n\n[tools.Remote.headers]\n'
                                         'Authorization = "Bearer ${SAGE_HTTP_CALL_TOKEN}"\n')
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "call", "Remote.echo", "text=over http") == \
        (0, "over http\n", "")
    assert run_sage(capsys, monkeypatch, tmp_path, "tools", "call", "--http", url, "add", "a=1") == \
        (1, "", "error: MCP auth error: server returned HTTP 401\n")
