"""One trust store (issue 13): `divine`, `Http.get` and a typed MCP call over Streamable HTTP verify their
HTTPS servers against the operating system's store, and all three agree on what it holds.

The servers run on 127.0.0.1 with a certificate from a throwaway CA. The store is pointed at that CA the way
OpenSSL lets a user do it, through `SSL_CERT_FILE` and `SSL_CERT_DIR`; each program runs in its own
`python -m sagepy run` process, so the store is read afresh with that environment. OpenSSL reads both the
file and the directory: a CA that sits only in the directory is trusted even when the file names another
bundle (httpx's and httpcore2's own handling of these variables reads only the file when it is set).
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from throwaway_ca import TlsFiles, make_tls_files

HERE = os.path.dirname(os.path.abspath(__file__))
REPLY = "pong over TLS"


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> TlsFiles:
    return make_tls_files(str(tmp_path_factory.mktemp("tls")))


class _Handler(BaseHTTPRequestHandler):
    """`POST …/chat/completions` answers REPLY; `GET /hello` answers a greeting."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}}]}
        self._send(json.dumps(body).encode(), "application/json")

    def do_GET(self) -> None:
        self._send(b"hello over TLS", "text/plain")

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _TlsServer(ThreadingHTTPServer):
    daemon_threads = True
    context = None

    def get_request(self):
        # The handshake happens in the handler's thread, so a client that rejects the certificate fails
        # only its own connection.
        sock, address = super().get_request()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request, client_address) -> None:
        """Clients that reject the certificate abort their handshakes: expected here."""


@pytest.fixture(scope="module")
def https_base(tls):
    server = _TlsServer(("127.0.0.1", 0), _Handler)
    server.context = tls.server_context()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def mcp_url(tls):
    port = _free_port()
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "tls_mcp_server.py"), str(port), tls.cert,
                               tls.key], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("the TLS MCP server did not start")
            time.sleep(0.05)
    yield f"https://127.0.0.1:{port}/mcp"
    server.terminate()
    server.wait(10)


PROGRAMS = {
    "divine": """\
agent Main {
    on start {
        print(try divine("ping"));
        yield(0);
    }
}
run Main;
""",
    "http": """\
agent Main {
    use Http
    on start {
        let r = try Http.get(env_or("HELLO_URL", ""));
        print("{r.status} {r.body}");
        yield(0);
    }
}
run Main;
""",
    "mcp": """\
tool Remote {
    fn echo(text: String) -> String
}

agent Main {
    use Remote
    on start {
        print(try Remote.echo("echo over TLS"));
        yield(0);
    }
}
run Main;
""",
}

EXPECTED = {"divine": REPLY, "http": "200 hello over TLS", "mcp": "echo over TLS"}


@pytest.fixture(scope="module")
def project(tmp_path_factory, https_base, mcp_url) -> str:
    root = tmp_path_factory.mktemp("project")
    (root / "grove.toml").write_text(f"""\
[project]
name = "tls"

[llm]
url = "{https_base}/v1"
model = "test-model"

[tools.Remote]
url = "{mcp_url}"
connect_timeout_ms = 20000
timeout_ms = 20000
""")
    for name, source in PROGRAMS.items():
        (root / f"{name}.sg").write_text(source)
    return str(root)


def run_program(project: str, name: str, https_base: str, cert_file: str, cert_dir: str
                ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SAGE_", "OPENAI_")) and k.lower() not in
           ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    env.update(SSL_CERT_FILE=cert_file, SSL_CERT_DIR=cert_dir, SAGE_API_KEY="test-key",
               HELLO_URL=f"{https_base}/hello")
    return subprocess.run([sys.executable, "-m", "sagepy", "run", f"{name}.sg"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def empty_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("no_certs"))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_ca_in_ssl_cert_file_is_trusted(project, https_base, tls, empty_dir, name):
    done = run_program(project, name, https_base, tls.ca, empty_dir)
    assert (done.returncode, done.stdout.strip()) == (0, EXPECTED[name]), done.stderr


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_ca_in_ssl_cert_dir_is_trusted_beside_another_bundle(project, https_base, tls, name):
    done = run_program(project, name, https_base, tls.other_ca, tls.ca_dir)
    assert (done.returncode, done.stdout.strip()) == (0, EXPECTED[name]), done.stderr


UNTRUSTED = "certificate verify failed: unable to get local issuer certificate"
# Each failure names what was tried (issue 17): the LLM's endpoint and the MCP server's URL. The Http tool's
# caller named the URL itself.
FAILURES = {
    "divine": r"LLM error: request failed: https://127\.0\.0\.1:\d+/v1/chat/completions: " + UNTRUSTED + "\n",
    "http": r"Tool error: Http\.get: request failed: " + UNTRUSTED + "\n",
    "mcp": r"MCP connection failed: 'Remote' at https://127\.0\.0\.1:\d+/mcp: " + UNTRUSTED + "\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_without_the_ca_every_client_refuses_the_server(project, https_base, tls, empty_dir, name):
    done = run_program(project, name, https_base, tls.other_ca, empty_dir)
    assert done.returncode == 1
    assert done.stdout.strip() == ""
    assert re.search(FAILURES[name], done.stderr), done.stderr
    assert "Traceback" not in done.stderr


def test_speaking_tls_to_a_plain_http_server_is_a_tls_error():
    from sagepy.core.errors import SageRaise
    from sagepy.tools import call_builtin_tool

    plain = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=plain.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        with pytest.raises(SageRaise) as caught:
            call_builtin_tool("Http", "get", [f"https://127.0.0.1:{plain.server_address[1]}/hello"])
    finally:
        plain.shutdown()
        plain.server_close()
        thread.join()
    assert caught.value.error.message == "Http.get: request failed: TLS error: wrong version number"
