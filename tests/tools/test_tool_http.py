"""The Http tool against a real HTTP server that the tests run on 127.0.0.1."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import sagepy
from sagepy.core.errors import AgentCancelled, SageRaise
from sagepy.tools import call_builtin_tool


class Handler(BaseHTTPRequestHandler):
    """Routes: /status/<n>, /headers, /echo (any method), /slow, /redirect, /text/latin1."""

    server: "Server"

    def log_message(self, *args) -> None:
        pass

    def reply(self, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path.startswith("/status/"):
            status = int(self.path.rsplit("/", 1)[1])
            self.reply(status, f"status {status}".encode())
        elif self.path == "/headers":
            self.reply(200, b"h", [("X-Custom-Header", "Value One"), ("X-Multi", "a"), ("X-Multi", "b"),
                                   ("Content-Type", "text/plain; charset=utf-8")])
        elif self.path == "/echo":
            echo = {"method": self.command, "body": body.decode("utf-8"),
                    "content_type": self.headers.get("Content-Type"),
                    "user_agent": self.headers.get("User-Agent")}
            self.reply(200, json.dumps(echo, ensure_ascii=False).encode("utf-8"),
                       [("Content-Type", "application/json; charset=utf-8")])
        elif self.path == "/slow":
            self.server.release.wait(10)
            self.reply(200, b"late")
        elif self.path == "/redirect":
            self.reply(302, b"", [("Location", "/status/201")])
        elif self.path == "/text/latin1":
            self.reply(200, "café".encode("latin-1"), [("Content-Type", "text/plain; charset=latin-1")])
        else:
            self.reply(404, b"not found")

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    release: threading.Event

    def handle_error(self, request, client_address) -> None:
        """A client that gave up (timeout, cancel) makes the late reply fail; that is expected here."""


@pytest.fixture
def base(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("SAGE_HTTP_TIMEOUT", raising=False)
    server = Server(("127.0.0.1", 0), Handler)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


def http(fn: str, *args, cancel: threading.Event | None = None):
    return call_builtin_tool("Http", fn, list(args), cancel=cancel)


def http_error(fn: str, *args) -> str:
    with pytest.raises(SageRaise) as info:
        http(fn, *args)
    assert info.value.error.kind == "Tool"
    return info.value.error.message


def test_get_returns_status_body_and_headers(base):
    response = http("get", base + "/status/200")
    assert set(response) == {"status", "body", "headers"}   # an HttpResponse as wire data
    assert response["status"] == 200
    assert response["body"] == "status 200"
    assert response["headers"]["content-length"] == "10"
    assert isinstance(response["headers"], dict)


@pytest.mark.parametrize("status", [201, 204, 400, 404, 418, 500, 503])
def test_non_2xx_statuses_are_results_not_errors(base, status):
    response = http("get", f"{base}/status/{status}")
    assert response["status"] == status
    assert response["body"] == ("" if status == 204 else f"status {status}")


def test_header_names_are_lower_cased_and_repeats_joined(base):
    headers = http("get", base + "/headers")["headers"]
    assert headers["x-custom-header"] == "Value One"
    assert headers["x-multi"] == "a, b"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert all(name == name.lower() for name in headers)
    assert "X-Custom-Header" not in headers


def test_user_agent_names_sagepy_and_its_version(base):
    echo = json.loads(http("get", base + "/echo")["body"])
    assert echo["user_agent"] == f"sagepy/{sagepy.__version__}"


@pytest.mark.parametrize("fn, method", [("post", "POST"), ("put", "PUT")])
def test_post_and_put_send_the_body_raw_as_json(base, fn, method):
    body = '{"name": "héllo", "n": [1, 2]}  not even json'
    echo = json.loads(http(fn, base + "/echo", body)["body"])
    assert echo == {"method": method, "body": body, "content_type": "application/json",
                    "user_agent": f"sagepy/{sagepy.__version__}"}


@pytest.mark.parametrize("fn, method", [("get", "GET"), ("delete", "DELETE")])
def test_get_and_delete_send_no_body(base, fn, method):
    echo = json.loads(http(fn, base + "/echo")["body"])
    assert echo["method"] == method
    assert echo["body"] == ""
    assert echo["content_type"] is None


def test_redirects_are_followed(base):
    response = http("get", base + "/redirect")
    assert response["status"] == 201
    assert response["body"] == "status 201"


def test_body_is_decoded_with_the_declared_charset(base):
    assert http("get", base + "/text/latin1")["body"] == "café"


def test_timeout_from_the_environment(base, monkeypatch):
    monkeypatch.setenv("SAGE_HTTP_TIMEOUT", "0.3")
    assert http_error("get", base + "/slow") == "Http.get: request timed out after 0.3 s"
    monkeypatch.setenv("SAGE_HTTP_TIMEOUT", "5")
    assert http("get", base + "/status/200")["status"] == 200


def test_whole_second_timeouts_are_shown_without_a_fraction(base, monkeypatch):
    monkeypatch.setenv("SAGE_HTTP_TIMEOUT", "1")
    assert http_error("post", base + "/slow", "{}") == "Http.post: request timed out after 1 s"


@pytest.mark.parametrize("value", ["soon", "0", "-2", "inf"])
def test_an_invalid_timeout_is_a_tool_error(base, monkeypatch, value):
    monkeypatch.setenv("SAGE_HTTP_TIMEOUT", value)
    assert http_error("get", base + "/status/200") == (
        f"Http.get: invalid SAGE_HTTP_TIMEOUT '{value}' (expected a positive number of seconds)")


def test_connection_refused_is_a_tool_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert http_error("get", f"http://127.0.0.1:{port}/") == "Http.get: request failed: Connection refused"
    assert http_error("delete", f"http://127.0.0.1:{port}/x") == "Http.delete: request failed: Connection refused"


@pytest.mark.parametrize("url, reason", [
    ("ftp://127.0.0.1/x", "Request URL has an unsupported protocol 'ftp://'."),
    ("127.0.0.1/x", "Request URL is missing an 'http://' or 'https://' protocol."),
])
def test_bad_urls_are_tool_errors(url, reason):
    assert http_error("get", url) == f"Http.get: request failed: {reason}"


def test_cancel_aborts_a_request_promptly(base):
    cancel = threading.Event()
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    try:
        with pytest.raises(AgentCancelled):
            http("get", base + "/slow", cancel=cancel)
    finally:
        timer.cancel()


def test_an_unset_cancel_flag_lets_the_request_finish(base):
    assert http("put", base + "/echo", "[]", cancel=threading.Event())["status"] == 200
