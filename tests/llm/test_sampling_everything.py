"""MCP sampling end to end: server-everything asks the client's model, sagepy answers with the configured LLM
(a real chat-completions server on 127.0.0.1) under `sage run`, and with `mock divine` under `sage test`."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI, reply

REPO = Path(__file__).resolve().parent.parent.parent
EVERYTHING = REPO / "tests" / "mcp" / "node" / "node_modules" / ".bin" / "mcp-server-everything"

# The Node servers are installed on first use (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("node_servers")

PROGRAM = """\
    tool Everything {
        #[mcp_name = "trigger-sampling-request"]
        fn sample(prompt: String) -> String
    }
    agent Main {
        use Everything
        on start {
            let r = try Everything.sample("What is the answer?");
            print(r);
        }
    }
    run Main;
    """


def project(tmp_path: Path, llm: str, sampling: bool = True) -> Path:
    (tmp_path / "grove.toml").write_text(textwrap.dedent(f"""\
        [project]
        entry = "main.sg"
        {llm}
        [tools.Everything]
        command = "{EVERYTHING}"
        sampling = {"true" if sampling else "false"}
        """), encoding="utf-8")
    (tmp_path / "main.sg").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    return tmp_path


def sage(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    full.update(env, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=90)


def test_sampling_answered_by_the_configured_model(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        llm.push(reply("forty-two"))
        root = project(tmp_path, f'[llm]\nurl = "{llm.url}"\nmodel = "tiny"\n')
        r = sage("run", ".", cwd=root, env={"SAGE_API_KEY": "sk-test"})
        assert r.returncode == 0, r.stderr
        assert '"text": "forty-two"' in r.stdout
        assert len(llm.requests) == 1
        request = llm.requests[0]
        assert request.body["model"] == "tiny"
        assert "What is the answer?" in str(request.messages)


def test_sampling_is_refused_without_the_setting(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = project(tmp_path, f'[llm]\nurl = "{llm.url}"\n', sampling=False)
        r = sage("run", ".", cwd=root, env={"SAGE_API_KEY": "sk-test"})
        assert r.returncode == 1
        assert "MCP " in r.stderr
        assert llm.requests == []


def test_sampling_under_sage_test_uses_mock_divine(tmp_path: Path) -> None:
    root = project(tmp_path, "")
    (root / "main_test.sg").write_text(textwrap.dedent("""\
        test "sampling from the mock queue" {
            mock divine -> "from the mock";
            let r = try Everything.sample("hi");
            assert_contains(r, "from the mock");
        }
        """), encoding="utf-8")
    r = sage("test", "main_test.sg", cwd=root, env={})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


def test_sampling_answered_through_the_messages_api(tmp_path: Path) -> None:
    from messages_server import KEY, MessagesServer
    with MessagesServer(["forty-two"]) as llm:
        root = project(tmp_path, f'[llm]\nprovider = "anthropic"\nurl = "{llm.url}"\nmodel = "claude-test"\n')
        r = sage("run", ".", cwd=root, env={"ANTHROPIC_API_KEY": KEY})
        assert r.returncode == 0, r.stderr
        assert '"text": "forty-two"' in r.stdout
        assert llm.errors == [] and len(llm.requests) == 1
        request = llm.requests[0]
        assert request["model"] == "claude-test" and isinstance(request["max_tokens"], int)
        assert "What is the answer?" in str(request["messages"])
        assert all(m["role"] in ("user", "assistant") for m in request["messages"])
