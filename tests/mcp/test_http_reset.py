"""A TCP reset in the middle of an HTTP MCP call fails the call at once as an `MCP I/O error` naming the reset,
not as a timeout after the full `timeout_ms`.

The suite server runs over Streamable HTTP behind a small TCP proxy of this file's. The proxy forwards bytes both
ways until it sees a trigger word: `reset-request` in a request (the server never sees the call) or
`reset-response` in an answer (the server has run it, the client is reading); then it closes both sides with
SO_LINGER 0, so the client gets a real RST, as from a crashed load balancer or a killed server host.

A second proxy plays a server that closes idle kept-alive connections: a request that comes on a connection
whose last answer was sent at least `idle_reset_s` before is reset unseen, as a server's idle close meets a request
it crosses. Requests never cross a close of that server when sagepy drops idle connections first.
"""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcp_helpers import start_http_suite

REPO = Path(__file__).resolve().parent.parent.parent
TRIGGERS = {True: b"reset-request", False: b"reset-response"}   # by direction: client to server or back


class ResettingProxy:
    """Forwards 127.0.0.1:<port> to the server; resets both sides of a connection that carries a trigger, or
    (with `idle_reset_s`) a request on a connection idle that long since its last answer."""

    def __init__(self, upstream_port: int, idle_reset_s: float | None = None) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.idle_reset_s = idle_reset_s
        self.answered: dict[int, float] = {}   # by connection (its client socket's id): when its last answer came
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.resets = 0
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            pair = (client, server)
            self.sockets += pair
            threading.Thread(target=self._pump, args=(client, server, pair, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, pair, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, pair: tuple, watch: bool) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if TRIGGERS[watch] in data or (watch and data and self._idle_too_long(pair)):
                self.resets += 1
                # SO_LINGER 0 makes the close a reset. The other pump's thread is blocked in recv on one of these
                # sockets, which holds the kernel's socket open past close(): SHUT_RD wakes it first.
                for sock in pair:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.shutdown(socket.SHUT_RD)
                for sock in pair:
                    sock.close()
                return
            if not data:
                for sock in pair:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            try:
                sink.sendall(data)
            except OSError:
                return
            if not watch:
                self.answered[id(pair[0])] = time.monotonic()

    def _idle_too_long(self, pair: tuple) -> bool:
        answered = self.answered.get(id(pair[0]))
        return self.idle_reset_s is not None and answered is not None and \
            time.monotonic() - answered >= self.idle_reset_s

    def close(self) -> None:
        self.listener.close()
        for sock in self.sockets:
            sock.close()


def suite_behind_proxy(tmp_path_factory, name: str, **proxy_options):
    server, port = start_http_suite(str(tmp_path_factory.mktemp(name)))
    front = ResettingProxy(port, **proxy_options)
    yield front
    front.close()
    server.kill()
    server.wait(10)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    yield from suite_behind_proxy(tmp_path_factory, "http-reset")


PROGRAM = """\
tool Remote {
    fn echo(text: String) -> String
}

agent Main {
    use Remote;
    on start {
        print(try Remote.echo("before"));
        let r = Remote.echo("TRIGGER") catch(e) {
            "{e}"
        };
        print(r);
    }
}
run Main;
"""


@pytest.mark.parametrize("trigger", ["reset-request", "reset-response"])
def test_a_reset_during_a_call_is_an_io_error_at_once(proxy, tmp_path: Path, trigger: str) -> None:
    (tmp_path / "grove.toml").write_text(
        '[project]\nname = "reset"\nentry = "main.sg"\n\n'
        f'[tools.Remote]\nurl = "http://127.0.0.1:{proxy.port}/mcp"\ntimeout_ms = 60000\n', encoding="utf-8")
    (tmp_path / "main.sg").write_text(PROGRAM.replace("TRIGGER", trigger), encoding="utf-8")
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    # A timeout_ms of 60 s and a subprocess limit of 45 s: a reset taken for silence cannot pass.
    result = subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=45)
    lines = result.stdout.splitlines()
    assert lines[0] == "before", result.stdout + result.stderr
    # The reason is the client's own reading of the reset: a refused read, the end of a response not begun, or
    # of a body cut short (which of them depends on where the reset finds the client).
    prefix = f"MCP I/O error: 'Remote' at http://127.0.0.1:{proxy.port}/mcp: "
    assert len(lines) == 2 and lines[1].startswith(prefix), lines
    reason = lines[1][len(prefix):]
    assert reason in ("Connection reset by peer", "Server disconnected without sending a response.") or \
        reason.startswith("peer closed connection without sending complete message body"), reason
    assert proxy.resets >= 1
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def idle_closing(tmp_path_factory):
    """A server that closes a connection idle for 2 s (gunicorn's default, the shortest common keep-alive timeout)
    and counts from when it wrote its answer, half a second before the client has read it under load: a request
    on a connection idle 1.5 s by the proxy's clock may cross the close."""
    yield from suite_behind_proxy(tmp_path_factory, "http-idle", idle_reset_s=1.5)


IDLE_PROGRAM = """\
tool Remote {
    fn echo(text: String) -> String
}

agent Main {
    use Remote;
    on start {
        print(try Remote.echo("before"));
        sleep_ms(1600);
        print(Remote.echo("after") catch(e) { "{e}" });
    }
}
run Main;
"""


def test_a_connection_left_idle_is_not_reused(idle_closing, tmp_path: Path) -> None:
    # The 1.6 s pause is the idle time under test, not a wait for an event: the call after it must not go out
    # on a connection the server may be closing, whatever the machine's load.
    (tmp_path / "grove.toml").write_text(
        '[project]\nname = "idle"\nentry = "main.sg"\n\n'
        f'[tools.Remote]\nurl = "http://127.0.0.1:{idle_closing.port}/mcp"\n', encoding="utf-8")
    (tmp_path / "main.sg").write_text(IDLE_PROGRAM, encoding="utf-8")
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert (result.stdout, result.returncode) == ("before\nafter\n", 0), result.stdout + result.stderr
    assert idle_closing.resets == 0
