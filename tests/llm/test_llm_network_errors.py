"""What a user reads when the model cannot be reached or refuses the key (issue 17), and the OpenAI variables
most users already have as fallbacks (SPEC §12), through `sage run` against a real chat-completions server."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, echo_auth, reply

from sagepy.llm import LlmConfig

SAGE_KEY = "sk-sage-secret-1111"
OPENAI_KEY = "sk-openai-secret-2222"
PROGRAM = """agent Main {
    on start {
        print(try divine("ping"));
    }
}
run Main;
"""


@pytest.fixture
def server():
    with FakeOpenAI() as s:
        yield s


def sage_run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    (tmp_path / "main.sg").write_text(PROGRAM, encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    return subprocess.run([sys.executable, "-m", "sagepy", "run", "main.sg"], cwd=tmp_path, env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr
    return done.stderr.splitlines()[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_variables_are_used_when_sagepy_has_none(tmp_path, server):
    server.push(reply("pong"))
    done = sage_run(tmp_path, {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": OPENAI_KEY})
    assert (done.returncode, done.stdout, done.stderr) == (0, "pong\n", "")
    assert server.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"


def test_sagepy_variables_win_over_openai_ones(tmp_path, server):
    server.push(reply("pong"))
    done = sage_run(tmp_path, {"SAGE_LLM_URL": server.url, "SAGE_API_KEY": SAGE_KEY,
                               "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "OPENAI_API_KEY": OPENAI_KEY})
    assert (done.returncode, done.stdout) == (0, "pong\n"), done.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {SAGE_KEY}"


def test_grove_toml_url_wins_over_openai_base_url_and_api_key_env_over_openai_key():
    config = LlmConfig.resolve({"url": "http://toml.local/v1", "api_key_env": "MY_KEY"},
                               {"OPENAI_BASE_URL": "http://openai.local/v1", "OPENAI_API_KEY": OPENAI_KEY,
                                "MY_KEY": SAGE_KEY})
    assert (config.url, config.api_key, config.key_env) == ("http://toml.local/v1", SAGE_KEY, "MY_KEY")
    fallback = LlmConfig.resolve({"api_key_env": "MY_KEY"}, {"OPENAI_API_KEY": OPENAI_KEY})
    assert (fallback.api_key, fallback.key_env, fallback.configured) == (OPENAI_KEY, "OPENAI_API_KEY", True)
    assert LlmConfig.resolve({}, {"OPENAI_BASE_URL": "http://local/v1"}).configured is True
    assert LlmConfig.resolve({}, {}).configured is False


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("variable", ["SAGE_API_KEY", "OPENAI_API_KEY"])
def test_a_refused_key_names_the_variable_it_came_from(tmp_path, server, status, variable):
    key = SAGE_KEY if variable == "SAGE_API_KEY" else OPENAI_KEY
    server.push(echo_auth(status))
    line = one_error_line(sage_run(tmp_path, {"SAGE_LLM_URL": server.url, variable: key}))
    body = json.dumps({"error": {"message": "Incorrect API key provided: Bearer [redacted]"}})
    assert line == (f"error: unhandled error in agent Main#0: LLM error: API error {status}: {body} "
                    f"(the key in {variable} was refused)")


def test_a_401_without_a_key_says_which_variable_is_unset(tmp_path, server):
    server.push(echo_auth(401))
    line = one_error_line(sage_run(tmp_path, {"SAGE_LLM_URL": server.url}))
    assert line.endswith('LLM error: API error 401: {"error": {"message": "Incorrect API key provided: "}} '
                         "(no key was sent: SAGE_API_KEY is not set)")


def test_a_multi_line_error_body_is_shown_on_one_line(tmp_path, server):
    server.push(lambda request: (400, {"Content-Type": "text/plain"}, b"bad\n  request\n"))
    line = one_error_line(sage_run(tmp_path, {"SAGE_LLM_URL": server.url, "SAGE_API_KEY": SAGE_KEY}))
    assert line.endswith("LLM error: API error 400: bad request")


def test_connection_refused_names_the_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    line = one_error_line(sage_run(tmp_path, {"SAGE_LLM_URL": url, "SAGE_LLM_RETRIES": "0"}))
    assert line.endswith(f"LLM error: request failed: {url}/chat/completions: Connection refused")


def test_an_unknown_host_names_the_url_without_its_credentials(tmp_path):
    done = sage_run(tmp_path, {"SAGE_LLM_URL": "http://user:pw0rd@no-such-host.invalid/v1",
                               "SAGE_LLM_RETRIES": "0"})
    line = one_error_line(done)
    assert "LLM error: request failed: http://no-such-host.invalid/v1/chat/completions: " in line
    assert "pw0rd" not in done.stderr
