"""The `Http` tool's one connection pool, shared by every agent of a program, and its cancellation when a
test times out; both through `python -m sagepy` against a real HTTP server on 127.0.0.1 that tells which
TCP connection carried each request."""
from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Handler(BaseHTTPRequestHandler):
    """`/count` answers at once; `/slow` answers only when the test ends, and notes when the client closes
    the connection while it waits; `/after` answers 200 once that close was seen (504 if it is not seen
    within two seconds)."""

    protocol_version = "HTTP/1.1"   # keep-alive: one handler serves every request of its connection
    server: "_Server"

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1
            self.number = self.server.connections

    def do_GET(self) -> None:
        self.server.note(self.path, self.number)
        if self.path == "/slow":
            if self._client_closed_while_waiting():
                self.server.note("closed /slow", self.number)
                self.server.slow_closed.set()
                self.close_connection = True
                return
        status = 200
        if self.path == "/after" and not self.server.slow_closed.wait(2.0):
            status = 504
        body = b"ok"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _client_closed_while_waiting(self) -> bool:
        while not self.server.stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                return True
        return False

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.slow_closed = threading.Event()
        self.connections = 0
        self.events: list[tuple[str, int]] = []   # (path or what happened, connection number), in order

    def note(self, what: str, connection: int) -> None:
        with self.lock:
            self.events.append((what, connection))

    def handle_error(self, request, client_address) -> None:
        """A client that went away mid-answer is expected here."""


@pytest.fixture
def server():
    httpd = _Server()
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield httpd
    httpd.stopping.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def sage(args: list[str], cwd: str, base: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_") and k.lower() not in
           ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    env.update(BASE_URL=base, NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def write(root, files: dict[str, str]) -> str:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(root)


POOL_PROGRAM = """\
    agent Fetcher {
        use Http
        url: String

        on start {
            let total = 0;
            for i in range(0, 3) {
                let r = try Http.get(self.url);
                total = total + r.status;
            }
            yield(total);
        }
    }

    agent Main {
        on start {
            let url = env_or("BASE_URL", "") ++ "/count";
            let first = try await summon Fetcher { url: url };
            let second = try await summon Fetcher { url: url };
            print("{first} {second}");
            let hs = map(range(0, 4), |i: Int| summon Fetcher { url: url });
            let total = 0;
            for h in hs {
                total = total + (try await h);
            }
            print(total);
        }
    }
    run Main;
    """


def test_agents_share_one_connection_pool(server, tmp_path):
    root = write(tmp_path, {"grove.toml": '[project]\nname = "pool"\n', "main.sg": POOL_PROGRAM})
    done = sage(["run", "main.sg"], root, f"http://127.0.0.1:{server.server_address[1]}")
    assert (done.returncode, done.stdout.split("\n")) == (0, ["600 600", "2400", ""]), done.stderr
    used = [connection for _, connection in server.events]
    assert len(used) == 18
    # Two agents one after the other: the second reuses the first one's connection.
    assert set(used[:6]) == {1}
    # Four agents at once need at most four connections, one of them the idle one left by the first two.
    assert server.connections <= 4


TIMEOUT_TESTS = """\
    test "a slow request" {
        let warm = try Http.get(env_or("BASE_URL", "") ++ "/count");
        let r = try Http.get(env_or("BASE_URL", "") ++ "/slow");
    }

    test "after it" {
        let r = try Http.get(env_or("BASE_URL", "") ++ "/after");
        assert_eq(r.status, 200);
    }
    """


def test_a_request_is_cancelled_when_its_test_times_out(server, tmp_path):
    root = write(tmp_path, {"grove.toml": '[project]\nname = "slow"\n',
                            "src/main.sg": "agent Main { on start { yield(0); } }\nrun Main;\n",
                            "src/main_test.sg": TIMEOUT_TESTS})
    # The first request of the slow test makes the process import httpx and read the trust store, which
    # the time limit must cover; the second one hangs.
    done = sage(["test", "--serial", "--timeout-ms", "3000"], root, f"http://127.0.0.1:{server.server_address[1]}")
    assert "FAIL src/main_test.sg::a slow request\n    timed out after 3000 ms" in done.stdout, done.stdout
    # The next test passes only if the slow request's connection was closed while that test ran: by the
    # cancelled request, not by the end of the process.
    assert "PASS src/main_test.sg::after it" in done.stdout, done.stdout
    assert server.events[:2] == [("/count", 1), ("/slow", 1)]
    assert ("closed /slow", 1) in server.events
