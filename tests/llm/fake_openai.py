"""A small chat-completions server for the LLM client's tests: real HTTP on 127.0.0.1, scripted answers.

Each test starts its own server, pushes the answers it wants, in order, and reads back the requests the
server received. An answer is a function of the request that returns (status, headers, body); the helpers
below build the usual ones. When the script runs out, the server answers 599 so a test notices at once.

The base URL carries a random path prefix, so each server is a distinct endpoint even if the operating
system hands out a port that an earlier test's server used (the client remembers per endpoint whether
`response_format` is supported).
"""
from __future__ import annotations

import json
import secrets
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Response = tuple[int, dict, bytes]


class Request:
    """One request the server received: path, headers (lower-case names) and the decoded JSON body."""

    def __init__(self, path: str, headers: dict[str, str], body: Any) -> None:
        self.path = path
        self.headers = headers
        self.body = body

    @property
    def messages(self) -> list[dict]:
        return self.body["messages"]


Answer = Callable[[Request], Response | None]


def _json(status: int, data: Any, headers: dict | None = None) -> Response:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(data).encode()


def reply(content: str | None, usage: dict | None = None) -> Answer:
    """A 200 completion whose message content is `content` (None: a message without content)."""
    def answer(request: Request) -> Response:
        message: dict[str, Any] = {"role": "assistant"}
        if content is not None:
            message["content"] = content
        data: dict[str, Any] = {"id": "chatcmpl-test", "object": "chat.completion",
                                "model": request.body.get("model"),
                                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        if usage is not None:
            data["usage"] = usage
        return _json(200, data)
    return answer


def status(code: int, body: str = "", headers: dict | None = None) -> Answer:
    """An answer with status `code` and a plain-text or JSON body."""
    def answer(request: Request) -> Response:
        return code, {"Content-Type": "text/plain", **(headers or {})}, body.encode()
    return answer


def echo_auth(code: int) -> Answer:
    """A failure whose body quotes the Authorization header back, as real APIs do with a rejected key."""
    def answer(request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        return _json(code, {"error": {"message": f"Incorrect API key provided: {auth}"}})
    return answer


def hang(seconds: float) -> Answer:
    """No answer for `seconds`, then a plain reply; when the server stops first, the connection is closed
    without an answer (the client gave up long ago)."""
    def answer(request: Request) -> Response | None:
        if request.server_stopping.wait(seconds):  # type: ignore[attr-defined]
            return None
        return reply("late")(request)
    return answer


def drop() -> Answer:
    """Close the connection without answering."""
    def answer(request: Request) -> None:
        return None
    return answer


class FakeOpenAI:
    """The server. Use as a context manager: `with FakeOpenAI() as server: ... server.url ...`."""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       name="fake-openai", daemon=True)
        prefix = secrets.token_hex(4)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/{prefix}/v1"

    def push(self, *answers: Answer) -> "FakeOpenAI":
        with self.lock:
            self.answers.extend(answers)
        return self

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def _next(self, request: Request) -> Response | None:
        with self.lock:
            self.requests.append(request)
            answer = self.answers.popleft() if self.answers else None
        if answer is None:
            return 599, {"Content-Type": "text/plain"}, b"fake_openai: no scripted answer left"
        return answer(request)


def _handler_for(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; without this, Nagle's algorithm and the client's
        # delayed ACK add 40 ms to every answer.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"Content-Type": "text/plain"}, b"not found")
                return
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
            request.server_stopping = server.stopping  # type: ignore[attr-defined]
            response = server._next(request)
            if response is None:
                self.close_connection = True
                return
            self._send(*response)

        def _send(self, code: int, headers: dict, body: bytes) -> None:
            self.send_response(code)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
