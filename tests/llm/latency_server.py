"""A chat-completions server that answers every request after a fixed latency and can hold thousands of
requests at once: one asyncio loop, no thread per connection (the load tests and bench/scale.py).

Every `POST …/chat/completions` gets, after `latency_ms`, a 200 completion whose content is `reply`; a typed
request (one with `response_format`) gets `typed_reply`. The server counts the requests it answered, keeps their
prompts and the most requests it held at once. Run it in a thread of the caller's process (`with LatencyServer(200) as server:`), or as
a process of its own, which prints its base URL and serves until its stdin closes:

    python tests/llm/latency_server.py --latency-ms 500
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading


class LatencyServer:
    """The server on 127.0.0.1 (a free port), run by its own event-loop thread while entered."""

    def __init__(self, latency_ms: int, reply: str = "ok", typed_reply: str = "{}") -> None:
        self.latency_s = latency_ms / 1000
        self.reply = reply
        self.typed_reply = typed_reply
        self.answered = 0
        self.prompts: list[str] = []   # the last message's content of every request answered, in order
        self.in_flight = 0
        self.peak_in_flight = 0
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> "LatencyServer":
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="latency-server", daemon=True)
        self._thread.start()
        if not ready.wait(30) or not self.url:
            raise RuntimeError("latency server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        loop = self._loop
        if loop is not None:
            asyncio.run_coroutine_threadsafe(self._stop(), loop)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0,
                                                                        backlog=4096))
            port = self._server.sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{port}/v1"
        finally:
            ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _stop(self) -> None:
        """Close the listening socket and every open connection, then end the loop."""
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        asyncio.get_running_loop().stop()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length") or 0))
                status, payload = await self._answer(method, path, body)
                writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                             % (status, b"OK" if status == 200 else b"Error", len(payload)) + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, b'{"error": {"message": "not found"}}'
        try:
            request = json.loads(body)
        except ValueError:
            return 400, b'{"error": {"message": "the body is not JSON"}}'
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        self.answered += 1
        messages = request.get("messages") or [{}]
        self.prompts.append(str(messages[-1].get("content", "")))
        content = self.typed_reply if "response_format" in request else self.reply
        return 200, json.dumps({
            "id": f"chatcmpl-{self.answered}", "object": "chat.completion", "model": request.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=int, default=500)
    options = parser.parse_args()
    with LatencyServer(options.latency_ms) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
