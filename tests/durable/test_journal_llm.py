"""Model turns are journaled (SPEC §14, kind `llm`): a resumed run does not ask the model again for an answer it
recorded, converts the recorded answer back to the `divine`'s type, and asks for the turns past the record."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]


class _Counting(BaseHTTPRequestHandler):
    """A chat-completions endpoint whose n-th request is answered with `answer n` (or, asked for JSON,
    `{"n": n}`)."""

    requests: list[str] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body["messages"][-1]["content"])
        n = len(self.requests)
        content = json.dumps({"n": n}) if body.get("response_format") else f"answer {n}"
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model() -> Iterator[tuple[str, list[str]]]:
    requests: list[str] = []
    handler = type("Handler", (_Counting,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()


def sage(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    for name in ("SAGE_CRASH_AFTER_WRITE", "SAGE_CRASH_BEFORE_WRITE", "SAGE_COUNT_WRITES"):
        full_env.pop(name, None)
    full_env.update(env)
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=60)


PROGRAM = """
record Count { n: Int }

agent Main {
    on start {
        let first = try divine("first question");
        let second: Count = try divine("second question -> Count" -> Count);
        let third = try divine("third question");
        print("{first} / {second.n} / {third}");
    }
}
run Main;
"""


def test_recorded_model_turns_are_not_asked_again(tmp_path: Path, model: tuple[str, list[str]]) -> None:
    url, requests = model
    template = tmp_path / "llm"
    (template / "src").mkdir(parents=True)
    (template / "grove.toml").write_text('[project]\nname = "llm"\n\n[persistence]\n', encoding="utf-8")
    (template / "src" / "main.sg").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    env = {"SAGE_LLM_URL": url, "SAGE_API_KEY": "test-key", "SAGE_MODEL": "counting"}
    for k in (1, 2):
        root = tmp_path / f"k{k}"
        shutil.copytree(template, root)
        requests.clear()
        first = sage("run", cwd=root, env={**env, "SAGE_CRASH_AFTER_WRITE": str(k)})
        assert (first.returncode, first.stdout) == (77, ""), first.stderr
        assert len(requests) == k
        resumed = sage("run", "--resume", "last", cwd=root, env=env)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "answer 1 / 2 / answer 3\n"
        assert requests == ["first question", "second question -> Count", "third question"]


class _ToolCalling(BaseHTTPRequestHandler):
    """A model that asks for `charge` twice (1, then 2), then answers with the last result."""

    requests: list[int] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(1)
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        charge = next(t["function"]["name"] for t in body["tools"] if t["function"]["name"].endswith("__charge"))
        if len(results) < 2:
            call = {"id": f"c{len(results)}", "type": "function",
                    "function": {"name": charge, "arguments": json.dumps({"amount": len(results) + 1})}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": f"done: {results[-1]}"}
        data = json.dumps({"choices": [{"message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


LEDGER = '''
import sys
from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("ledger")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def charge(amount: int) -> str:
    with open("ledger.txt", "a", encoding="utf-8") as f:
        f.write(f"{amount}\\n")
    return f"charged {amount}"


if __name__ == "__main__":
    server.run()
'''


def test_a_resumed_tool_loop_replays_turns_and_calls_over_a_replayed_connection(tmp_path: Path) -> None:
    requests: list[int] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_ToolCalling,), {"requests": requests}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        template = tmp_path / "loop"
        (template / "src").mkdir(parents=True)
        (template / "ledger_server.py").write_text(LEDGER, encoding="utf-8")
        (template / "grove.toml").write_text('[project]\nname = "loop"\n\n[persistence]\n', encoding="utf-8")
        config = '{"transport": "stdio", "command": "' + sys.executable + '", "args": ["ledger_server.py"]}'
        (template / "src" / "main.sg").write_text(textwrap.dedent("""
            agent Main {
                on start {
                    let h = try mcp_connect('CONFIG');
                    let t = now_ms();
                    print(try divine("charge twice", tools: [h]));
                }
            }
            run Main;
        """).replace("CONFIG", config), encoding="utf-8")
        env = {"SAGE_LLM_URL": f"http://127.0.0.1:{server.server_address[1]}/v1", "SAGE_API_KEY": "test-key",
               "SAGE_MODEL": "scripted"}
        # writes: connect, now_ms, turn 1, charge 1 (started, done), turn 2, charge 2 (started, done), turn 3
        for k in (2, 3, 5, 6, 8):
            root = tmp_path / f"k{k}"
            shutil.copytree(template, root)
            requests.clear()
            first = sage("run", cwd=root, env={**env, "SAGE_CRASH_AFTER_WRITE": str(k)})
            assert first.returncode == 77, first.stderr
            resumed = sage("run", "--resume", "last", cwd=root, env=env)
            assert (resumed.returncode, resumed.stdout) == (0, "done: charged 2\n"), (k, resumed.stderr)
            assert (root / "ledger.txt").read_text() == "1\n2\n", k
            assert len(requests) == 3, k   # no turn asked twice
    finally:
        server.shutdown()
        server.server_close()
