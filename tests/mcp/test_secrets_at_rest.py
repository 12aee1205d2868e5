"""Secrets at rest (issue 18): what sagepy keeps under `.sage/` holds no secret from a server's command line,
environment or URL, and is private to the user (directories 0700, log files 0600); a token pasted where
`token_env` wants a variable name is refused without being repeated."""
from __future__ import annotations

import json
import os
import stat

import pytest

from mcp_helpers import call_typed, start_http_suite, suite_server
from sagepy.grove.servers import parse_tools_config
from sagepy.mcp.dynamic import parse_connect_config
from sagepy.mcp.failures import McpFailure
from sagepy.secrecy import looks_like_token, mask_urls
from sagepy.core.types import STRING

SECRETS = ["ARGVSECRET1", "ARGVSECRET2", "URLPASS3", "URLQUERY4", "ENVSECRET5", "ENVLITERAL6"]


def sage_files(root) -> dict[str, bytes]:
    found = {}
    for directory, _dirs, files in os.walk(os.path.join(root, ".sage")):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, root)] = fh.read()
    return found


def assert_private_and_clean(root) -> dict[str, bytes]:
    files = sage_files(root)
    for directory, dirs, _files in os.walk(os.path.join(root, ".sage")):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
    for path, data in files.items():
        if path.endswith(".log"):
            assert stat.S_IMODE(os.stat(os.path.join(root, path)).st_mode) == 0o600, path
        for secret in SECRETS:
            assert secret.encode() not in data, (secret, path)
    return files


@pytest.fixture(autouse=True)
def usual_umask():
    """The usual umask, under which a plain open or mkdir makes files 0644 and directories 0755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_stdio_server_leaves_no_secret_under_dot_sage(managers, tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_TEST_SECRET_ENV", "ENVSECRET5")
    manager = managers({"Local": suite_server(
        "--token", "ARGVSECRET1", "--api-key=ARGVSECRET2", "https://user:URLPASS3@example.invalid/?token=URLQUERY4",
        env={"API_TOKEN": "$SAGE_TEST_SECRET_ENV", "PLAIN_KEY": "ENVLITERAL6"})})
    assert call_typed(manager, "Local", "Local.echo", "echo", {"text": "hi"}, STRING) == "hi"
    manager.close_all()
    files = assert_private_and_clean(str(tmp_path))
    header = files[os.path.join(".sage", "logs", "Local.log")].decode()
    assert "start:" in header and "--token ****" in header and "--api-key=****" in header
    assert "user:****@example.invalid/?token=****" in header


def test_an_http_server_url_leaves_no_secret_under_dot_sage(managers, tmp_path):
    server, port = start_http_suite(str(tmp_path))
    try:
        url = f"http://user:URLPASS3@127.0.0.1:{port}/mcp?token=URLQUERY4&page=1"
        manager = managers({"Remote": {"url": url}})
        assert call_typed(manager, "Remote", "Remote.echo", "echo", {"text": "hi"}, STRING) == "hi"
        manager.close_all()
    finally:
        server.terminate()
        server.wait(10)
    files = assert_private_and_clean(str(tmp_path))
    assert f"127.0.0.1:{port}/mcp?token=****&page=1".encode() in files[os.path.join(".sage", "logs", "Remote.log")]
    assert b"token=****" in files[os.path.join(".sage", "logs", "sdk.log")]  # httpx logs every request's URL


def test_an_existing_log_and_dot_sage_are_narrowed(managers, tmp_path):
    logs = tmp_path / ".sage" / "logs"
    logs.mkdir(parents=True)
    os.chmod(tmp_path / ".sage", 0o755)
    (logs / "Local.log").write_text("older run\n")
    os.chmod(logs / "Local.log", 0o644)
    manager = managers({"Local": suite_server()})
    assert call_typed(manager, "Local", "Local.echo", "echo", {"text": "hi"}, STRING) == "hi"
    manager.close_all()
    assert_private_and_clean(str(tmp_path))
    assert (logs / "Local.log").read_text().startswith("older run\n")


TOKEN = "ghp_R3alT0kenV4lueXyz12345"


@pytest.mark.parametrize("value", [TOKEN, "sk-proj-abc", "aB3dEfGh1JkLmN0pQrStUv", "0123456789abcdef0123456789abcdef",
                                   "has space", "a.b"])
def test_values_that_look_like_tokens(value):
    assert looks_like_token(value)


@pytest.mark.parametrize("value", ["GITHUB_TOKEN", "calendar_key_2", "SAGE_TEST_HTTP_TOKEN", "MyToken", "_X1",
                                   "SUPERLONGVARIABLENAMEWITHOUTUNDERSCORE"])
def test_variable_names_do_not_look_like_tokens(value):
    assert not looks_like_token(value)


def test_a_token_pasted_as_token_env_is_refused_without_repeating_it(tmp_path):
    grove = tmp_path / "grove.toml"
    grove.write_text(f'[tools.Api]\nurl = "http://127.0.0.1:9/mcp"\nauth = "bearer"\ntoken_env = "{TOKEN}"\n')
    servers, diagnostics = parse_tools_config(
        {"tools": {"Api": {"url": "http://127.0.0.1:9/mcp", "auth": "bearer", "token_env": TOKEN}}}, str(grove))
    assert servers == {}
    [diagnostic] = diagnostics
    assert diagnostic.code == "E090"
    assert "token_env must be the name of the environment variable" in diagnostic.message
    assert TOKEN not in diagnostic.message and TOKEN not in (diagnostic.hint or "")
    assert diagnostic.span[0] == 1  # the table's line, not the line that holds the token
    with pytest.raises(McpFailure) as caught:
        parse_connect_config(json.dumps({"url": "http://127.0.0.1:9/mcp", "auth": "bearer", "token_env": TOKEN}), 1)
    assert "token_env must be the name" in caught.value.message and TOKEN not in caught.value.message


def test_urls_in_text_are_masked():
    text = 'POST http://u:pw@h:1/p?token=abc&x=1 "HTTP/1.1 200 OK" then ftp://[broken'
    assert mask_urls(text) == 'POST http://u:****@h:1/p?token=****&x=1 "HTTP/1.1 200 OK" then ****'
