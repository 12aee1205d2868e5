"""Third-party servers over real stdio: mcp-server-time and mcp-server-git (Python, 2026-07-28) and the
Node reference servers server-everything and server-filesystem (2025-11-25). The test extra installs the
Python ones; the Node ones are installed on first use (tests/conftest.py)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from mcp_helpers import TIME_RESULT, call_typed, installed, node_server
from sagepy.mcp.elicitation import DECLINE
from sagepy.core.errors import SageRaise
from sagepy.effects.wire import mcp_errors
from sagepy.core.types import STRING, RecordInfo, RecordT, INT

# The Node servers are installed on first use (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("node_servers")

WEATHER = RecordT(RecordInfo("Weather", [], [("temperature", INT), ("conditions", STRING), ("humidity", INT)]))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("repo")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", "first"], check=True, env=env)
    (path / "a.txt").write_text("two\n")
    return path


@pytest.fixture(scope="module")
def servers(module_managers, repo, tmp_path_factory):
    files = tmp_path_factory.mktemp("files")
    (files / "hello.txt").write_text("hello from disk\n")
    asked: list = []

    def elicitation(server, request):
        asked.append((server, request))
        return DECLINE

    manager = module_managers({
        "Time": {"command": installed("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "Git": {"command": installed("mcp-server-git"), "args": ["--repository", str(repo)],
                "safety": {"git_commit": "idempotent"}},
        "Everything": {"command": node_server("mcp-server-everything"), "args": ["stdio"]},
        "Files": {"command": node_server("mcp-server-filesystem"), "args": [str(files)]},
    }, elicitation=elicitation)
    manager.prestart(["Time", "Git", "Everything", "Files"])
    manager.files = files
    manager.asked = asked
    return manager


def test_time_record_from_structured_content(servers):
    now = call_typed(servers, "Time", "Time.now", "get_current_time", {"timezone": "Europe/Paris"}, TIME_RESULT)
    assert now.name == "TimeResult" and now.fields["timezone"] == "Europe/Paris"
    assert now.fields["datetime"][:2] == "20" and isinstance(now.fields["is_dst"], bool)
    assert servers.safety("Time", "get_current_time") == "read_only"
    with pytest.raises(SageRaise) as caught, mcp_errors():
        call_typed(servers, "Time", "Time.now", "get_current_time", {"timezone": "Mars/Olympus"}, TIME_RESULT)
    assert caught.value.error.display().startswith("MCP tool error: ")


def test_git_status_and_safety(servers, repo):
    status = call_typed(servers, "Git", "Git.status", "git_status", {"repo_path": str(repo)}, STRING)
    assert "a.txt" in status
    diff = call_typed(servers, "Git", "Git.diff", "git_diff_unstaged", {"repo_path": str(repo)}, STRING)
    assert "-one" in diff and "+two" in diff
    assert servers.safety("Git", "git_status") == "read_only"
    assert servers.safety("Git", "git_reset") == "idempotent"  # destructive but idempotent
    assert servers.safety("Git", "git_checkout") == "destructive"
    assert servers.safety("Git", "git_add") == "idempotent"
    assert servers.safety("Git", "git_commit") == "idempotent"  # override


def test_everything_legacy_server(servers):
    assert call_typed(servers, "Everything", "E.echo", "echo", {"message": "hi"}, STRING) == "Echo: hi"
    weather = call_typed(servers, "Everything", "E.weather", "get-structured-content", {"location": "New York"},
                                 WEATHER)
    assert set(weather.fields) == {"temperature", "conditions", "humidity"}
    assert call_typed(servers, "Everything", "E.sum", "get-sum", {"a": 2, "b": 3}, STRING) == "The sum of 2 and 3 is 5."
    assert servers.safety("Everything", "echo") == "read_only"


def test_everything_elicitation_is_answered(servers):
    text = call_typed(servers, "Everything", "E.elicit", "trigger-elicitation-request", {}, STRING)
    assert "decline" in text
    server, request = servers.asked[-1]
    assert server == "Everything" and request.mode == "form" and len(request.schema["properties"]) > 5


def test_filesystem(servers):
    root = str(servers.files)
    text = call_typed(servers, "Files", "Files.read", "read_text_file", {"path": os.path.join(root, "hello.txt")},
                              STRING)
    assert text == "hello from disk\n"
    with pytest.raises(SageRaise) as caught, mcp_errors():
        call_typed(servers, "Files", "Files.read", "read_text_file", {"path": "/etc/passwd"}, STRING)
    assert caught.value.error.display().startswith("MCP tool error: ")
    assert "outside allowed directories" in caught.value.error.message
    assert servers.safety("Files", "read_text_file") == "read_only"
    assert servers.safety("Files", "write_file") == "idempotent"  # destructive but idempotent
    assert servers.safety("Files", "edit_file") == "destructive"
    assert servers.safety("Files", "create_directory") == "idempotent"


def test_everything_sampling_uses_the_callable(managers):
    prompts: list = []

    def sampling(server, messages, system, max_tokens):
        prompts.append((server, messages, max_tokens))
        return "sampled answer"

    manager = managers(sampling=sampling)
    h = manager.connect(json.dumps({"command": node_server("mcp-server-everything"), "args": ["stdio"],
                                    "sampling": True, "name": "everything"}))
    text = manager.call(h, "trigger-sampling-request", '{"prompt": "Say hi", "maxTokens": 20}')
    assert "sampled answer" in text
    assert prompts and prompts[0][0] == "everything" and prompts[0][1][0]["content"].endswith("Say hi")


def test_sampling_is_refused_when_not_enabled(managers):
    manager = managers(sampling=lambda *args: "never")
    h = manager.connect(json.dumps({"command": node_server("mcp-server-everything"), "args": ["stdio"]}))
    names = {tool["name"] for tool in json.loads(manager.list_tools(h))}
    assert "trigger-sampling-request" not in names  # the capability was not advertised
