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
