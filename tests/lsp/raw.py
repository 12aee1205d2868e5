"""`sage lsp` spoken to byte by byte: frames written as given (malformed ones included) to the server's real
stdin, and every message it writes read back from its stdout by a thread, so that a test can wait for the
answer to one request with a deadline and see that the server is still there."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


class RawServer:
    def __init__(self, root: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen([sys.executable, "-m", "sagepy", "lsp"], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: list[dict] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0
        self.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
        self.notify("initialized", {})

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self.changed:
                        self.changed.notify_all()
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
                elif line in (b"\r\n", b"\n") and length is not None:
                    break
            message = json.loads(out.read(length))
            with self.changed:
                self.messages.append(message)
                self.changed.notify_all()

    def send_bytes(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def ask(self, method: str, params: Any) -> int:
        """Send a request; its id."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def answer(self, msg_id: int, timeout: float = 60) -> dict:
        """The response to request `msg_id`, waited for up to `timeout` seconds while the server lives."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for message in self.messages:
                    if message.get("id") == msg_id and "method" not in message:
                        return message
                if self.proc.poll() is not None:
                    raise AssertionError(f"the server ended (exit {self.proc.returncode}) before answering "
                                         f"{msg_id}: {self.proc.stderr.read().decode(errors='replace')}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no answer to request {msg_id} within {timeout} s")
                self.changed.wait(min(left, 1.0))

    def notified(self, method: str, timeout: float = 60) -> dict:
        """The first notification `method` the server sent, waited for up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for message in self.messages:
                    if message.get("method") == method and "id" not in message:
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no {method} within {timeout} s (server exit {self.proc.poll()})")
                self.changed.wait(min(left, 1.0))

    def request(self, method: str, params: Any) -> dict:
        return self.answer(self.ask(method, params))

    def logged(self) -> list[str]:
        with self.changed:
            return [m["params"]["message"] for m in self.messages if m.get("method") == "window/logMessage"]

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None)
                self.notify("exit", None)
                self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                stream.close()
