"""Network failures of MCP over HTTP read as one line naming what was tried (issue 17, SPEC §8.10): a URL that
answers but is not an MCP server, a refused connection and an unknown host, against real local servers."""
from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from tools_cli_helpers import run_sage, sage_process, write


def web_server(status: int, content_type: str | None, body: bytes) -> ThreadingHTTPServer:
    """A plain web server answering every request with the same page."""
    class Page(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            if content_type is not None:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


@pytest.fixture
def serve() -> Iterator:
    started: list[ThreadingHTTPServer] = []

    def start(status: int, content_type: str | None, body: bytes) -> str:
        server = web_server(status, content_type, body)
        started.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/mcp"
    yield start
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("status, content_type, body, shown", [
    (200, "text/html; charset=utf-8", b"<html><body>hello</body></html>", "200 text/html"),
    (404, "text/html", b"<h1>Not Found</h1>", "404 text/html"),
    (405, "text/plain", b"Method Not Allowed", "405 text/plain"),
    # JSON that is not JSON-RPC: the SDK's parse error would print a page of validation errors
    (200, "application/json", b'{"status": "ok", "items": [1, 2]}', "200 application/json"),
    (200, None, b"", "200 without a content type"),
])
def test_an_endpoint_that_is_not_mcp(serve, tmp_path, capsys, monkeypatch, status, content_type, body, shown):
    url = serve(status, content_type, body)
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "--http", url)
    assert (code, out, err) == (1, "", f"error: MCP connection failed: {url} answered HTTP {shown}, not MCP\n")


def test_a_refused_login_stays_an_auth_error_whatever_the_page(serve, tmp_path, capsys, monkeypatch):
    url = serve(401, "text/html", b"<h1>Login</h1>")
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "--http", url)
    assert (code, out, err) == (1, "", "error: MCP auth error: server returned HTTP 401\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_and_unknown_host_name_the_url(tmp_path, capsys, monkeypatch):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "--http", url)
    assert (code, out, err) == (1, "", f"error: MCP connection failed: '127.0.0.1' at {url}: Connection refused\n")
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "tools", "inspect", "--http",
                              "http://no-such-host.invalid/mcp?api_key=s3cret")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("error: MCP connection failed: 'no-such-host.invalid' at http://no-such-host.invalid/mcp: ")
    assert "s3cret" not in err


def test_a_typed_call_in_a_program_reads_the_same(serve, tmp_path):
    url = serve(200, "text/html", b"<html></html>")
    write(tmp_path / "grove.toml", f'[tools.Site]\nurl = "{url}"\n')
    write(tmp_path / "main.sg", """
tool Site {
    fn echo(text: String) -> String
}

agent Main {
    use Site
    on start {
        print(try Site.echo("hi"));
    }
}
run Main;
""")
    done = sage_process(tmp_path, "run", "main.sg")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[0] == ("error: unhandled error in agent Main#0: MCP connection failed: "
                                           f"{url} answered HTTP 200 text/html, not MCP")
