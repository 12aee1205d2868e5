"""OAuth 2.1 with PKCE for Streamable HTTP servers (SPEC §8.2, §8.10, §12), end to end on 127.0.0.1.

One process (`servers/oauth_stack.py`) runs an authorisation server that approves every request at once
and an MCP server that requires its tokens; `SAGE_OAUTH_OPEN` names `servers/oauth_open.py`, which follows
the authorisation URL with urllib, so every login completes unattended. The authorisation server counts
what it is asked (`/_stats`), which is how the tests tell a login from a cached token or a refresh.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import secrets
import select
import shlex
import socket
import stat
import subprocess
import sys
import time
import urllib.request

import httpx
import pytest

from mcp_helpers import SERVERS, call_typed
from sagepy.mcp.oauth import token_path
from sagepy.core.errors import SageRaise
from sagepy.effects.wire import mcp_errors
from sagepy.core.types import STRING

STACK = os.path.join(SERVERS, "oauth_stack.py")
OPENER = os.path.join(SERVERS, "oauth_open.py")


@pytest.fixture(scope="module")
def stack():
    """`{"as": issuer URL, "mcp": MCP endpoint}` of a running authorisation + MCP server pair."""
    process = subprocess.Popen([sys.executable, STACK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    try:
        ready, _, _ = select.select([process.stdout], [], [], 30)
        line = process.stdout.readline() if ready else b""
        assert line, "the OAuth test servers did not start"
        yield json.loads(line)
    finally:
        process.stdin.close()  # the servers stop at the end of their stdin
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


@pytest.fixture
def opener(monkeypatch):
    monkeypatch.setenv("SAGE_OAUTH_OPEN", f"{shlex.quote(sys.executable)} {shlex.quote(OPENER)}")


def stats(stack) -> dict:
    with urllib.request.urlopen(stack["as"] + "/_stats", timeout=5) as answer:
        return json.loads(answer.read())


def control(stack, **settings) -> None:
    request = urllib.request.Request(stack["as"] + "/_control", data=json.dumps(settings).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(request, timeout=5).close()


def docs(stack, **keys) -> dict:
    table = {"url": stack["mcp"], "auth": "oauth", "timeout_ms": 5000}
    table.update(keys)
    return {"Docs": table}


def echo(manager, text: str) -> str:
    return call_typed(manager, "Docs", "Docs.echo", "echo", {"text": text}, STRING)


def error_of(fn, *args) -> str:
    with pytest.raises(SageRaise) as caught, mcp_errors():
        fn(*args)
    return caught.value.error.display()


def cached(root: str) -> dict:
    with open(token_path(root, "Docs"), encoding="utf-8") as fh:
        return json.load(fh)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_first_login_then_a_tool_call(stack, managers, opener, capfd):
    before = stats(stack)
    events: list = []
    manager = managers(docs(stack), trace=lambda kind, data: events.append((kind, data)))
    assert echo(manager, "after login") == "after login"
    after = stats(stack)
    assert after["register"] == before["register"] + 1          # dynamic registration
    assert after["authorize"] == before["authorize"] + 1
    assert after["token_code"] == before["token_code"] + 1       # the PKCE check passed
    assert after["pkce_failures"] == before["pkce_failures"]
    assert after["registered_name"] == "sagepy"

    path = token_path(managers.root, "Docs")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    tokens = cached(managers.root)["tokens"]
    assert tokens["access_token"].startswith("at-") and tokens["refresh_token"].startswith("rt-")

    manager.close_all()
    err = capfd.readouterr().err
    assert "MCP server 'Docs' needs authorisation; opening this URL to log in:" in err
    assert stack["as"] + "/authorize?" in err and "code_challenge_method=S256" in err
    logs = os.path.join(managers.root, ".sage", "logs")
    written = err + repr(events) + "".join(open(os.path.join(logs, f), encoding="utf-8").read()
                                           for f in os.listdir(logs))
    for secret in (tokens["access_token"], tokens["refresh_token"]):
        assert secret not in written


def test_cached_token_is_reused_without_a_login(stack, managers, opener, monkeypatch):
    assert echo(managers(docs(stack)), "first") == "first"
    managers.made[-1].close_all()
    before = stats(stack)
    # No way to log in now: a login attempt would fail with "interactive login required".
    monkeypatch.delenv("SAGE_OAUTH_OPEN")
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    assert echo(managers(docs(stack)), "second") == "second"
    after = stats(stack)
    assert (after["authorize"], after["token_code"], after["token_refresh"], after["register"]) == \
        (before["authorize"], before["token_code"], before["token_refresh"], before["register"])


def test_expired_access_token_is_refreshed(stack, managers, opener):
    control(stack, access_lifetime=1)
    try:
        assert echo(managers(docs(stack)), "short-lived") == "short-lived"
    finally:
        control(stack, access_lifetime=3600)
    managers.made[-1].close_all()
    old = cached(managers.root)
    time.sleep(max(0.0, old["expires_at"] - time.time()) + 0.2)  # the server refuses it from now on
    before = stats(stack)
    assert echo(managers(docs(stack)), "refreshed") == "refreshed"
    after = stats(stack)
    assert after["token_refresh"] == before["token_refresh"] + 1
    assert after["authorize"] == before["authorize"]
    new = cached(managers.root)
    assert new["tokens"]["access_token"] != old["tokens"]["access_token"]
    assert new["tokens"]["refresh_token"] != old["tokens"]["refresh_token"]  # rotated, and stored
    assert new["expires_at"] > time.time() + 3000


def test_non_interactive_without_a_token(stack, managers, monkeypatch):
    monkeypatch.delenv("SAGE_OAUTH_OPEN", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    before = stats(stack)
    manager = managers(docs(stack))
    assert error_of(echo, manager, "x") == "MCP auth error: interactive login required for 'Docs'"
    message = error_of(manager.connect, json.dumps({"url": stack["mcp"], "auth": "oauth", "name": "Notes"}))
    assert message == "MCP connection failed: MCP auth error: interactive login required for 'Notes'"
    assert stats(stack)["authorize"] == before["authorize"]


def test_refused_token_is_http_401(stack, managers, opener):
    assert echo(managers(docs(stack)), "accepted") == "accepted"
    managers.made[-1].close_all()
    control(stack, reject=True)
    try:
        before = stats(stack)
        manager = managers(docs(stack))
        assert error_of(echo, manager, "x") == "MCP auth error: server returned HTTP 401"
        assert stats(stack)["authorize"] == before["authorize"] + 1   # one new login, no loop
    finally:
        control(stack, reject=False)


def test_overrides(stack, managers, opener, monkeypatch):
    monkeypatch.setenv("SAGE_TEST_OAUTH_CLIENT", "sage-preregistered")
    port = _free_port()
    before = stats(stack)
    manager = managers(docs(stack, client_id_env="SAGE_TEST_OAUTH_CLIENT",
                            authorization_url=stack["as"] + "/alt/authorize", token_url=stack["as"] + "/alt/token",
                            scopes=["read", "write"], redirect_port=port))
    assert call_typed(manager, "Docs", "Docs.whoami", "whoami", {}, STRING) == "sage-preregistered"
    after = stats(stack)
    assert after["register"] == before["register"]
    assert (after["authorize_alt"], after["authorize"]) == (before["authorize_alt"] + 1, before["authorize"])
    assert after["token_alt"] == before["token_alt"] + 1
    assert after["last_scope"] == "read write"
    assert after["last_redirect_uri"] == f"http://127.0.0.1:{port}/callback"


def test_login_time_does_not_count_against_the_connect_timeout(stack, managers, monkeypatch):
    monkeypatch.setenv("SAGE_OAUTH_OPEN", f"{shlex.quote(sys.executable)} {shlex.quote(OPENER)} --delay 1.5")
    manager = managers(docs(stack, connect_timeout_ms=1000))
    assert echo(manager, "slow login") == "slow login"


def test_unset_client_id_variable(stack, managers, monkeypatch):
    monkeypatch.delenv("SAGE_TEST_OAUTH_CLIENT", raising=False)
    manager = managers(docs(stack, client_id_env="SAGE_TEST_OAUTH_CLIENT"))
    assert error_of(echo, manager, "x") == \
        "MCP auth error: [tools.Docs] client_id_env refers to unset environment variable 'SAGE_TEST_OAUTH_CLIENT'"


def test_failing_open_command(stack, managers, monkeypatch):
    monkeypatch.setenv("SAGE_OAUTH_OPEN", "false")
    manager = managers(docs(stack))
    assert error_of(echo, manager, "x") == \
        "MCP auth error: SAGE_OAUTH_OPEN command exited with status 1 before the login completed"


def test_authorisation_server_verifies_the_pkce_challenge(stack):
    """The test server itself: a code is only exchanged with the verifier its challenge was made from."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    with httpx.Client(base_url=stack["as"], follow_redirects=False, timeout=5) as http:
        client = http.post("/register", json={"redirect_uris": ["http://127.0.0.1/callback"]}).json()["client_id"]

        def code() -> str:
            answer = http.get("/authorize", params={
                "response_type": "code", "client_id": client, "redirect_uri": "http://127.0.0.1:9/callback",
                "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"})
            assert answer.status_code == 302
            return httpx.URL(answer.headers["location"]).params["code"]

        def exchange(code: str, verifier: str) -> httpx.Response:
            return http.post("/token", data={"grant_type": "authorization_code", "code": code, "client_id": client,
                                             "redirect_uri": "http://127.0.0.1:9/callback", "code_verifier": verifier})

        refused = exchange(code(), "x" * 43)
        assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")
        assert exchange(code(), verifier).status_code == 200


# ---------------------------------------------------------------- client credentials (no person)

def machine(stack, **keys) -> dict:
    return docs(stack, grant="client_credentials", client_id_env="MACHINE_ID", client_secret_env="MACHINE_SECRET",
                **keys)


def test_client_credentials_renew_before_expiry(stack, managers, monkeypatch):
    """Nothing is opened or asked; a token about to expire is renewed before the request, never refused."""
    monkeypatch.setenv("MACHINE_ID", "sage-machine")
    monkeypatch.setenv("MACHINE_SECRET", "machine-secret")
    monkeypatch.delenv("SAGE_OAUTH_OPEN", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    control(stack, access_lifetime=6)   # renewed in the second half of its life
    try:
        manager = managers(machine(stack))
        before = stats(stack)
        assert call_typed(manager, "Docs", "Docs.whoami", "whoami", {}, STRING) == "sage-machine"
        first = stats(stack)
        assert first["token_client_credentials"] == before["token_client_credentials"] + 1
        time.sleep(max(0.0, cached(managers.root)["expires_at"] - 3 - time.time()) + 0.2)
        assert echo(manager, "later") == "later"
    finally:
        control(stack, access_lifetime=3600)
    after = stats(stack)
    assert after["token_client_credentials"] == first["token_client_credentials"] + 1
    assert after["refused"] == first["refused"]
    assert after["authorize"] == before["authorize"] and after["register"] == before["register"]
    assert cached(managers.root)["expires_at"] > time.time()


def test_client_credentials_failures(stack, managers, monkeypatch):
    monkeypatch.setenv("MACHINE_ID", "sage-machine")
    monkeypatch.setenv("MACHINE_SECRET", "wrong-secret")
    with pytest.raises(SageRaise) as caught, mcp_errors():
        echo(managers(machine(stack)), "x")
    message = caught.value.error.display()
    assert message.startswith("MCP auth error: client-credentials token request for 'Docs' failed: ")
    assert "wrong-secret" not in message
    monkeypatch.delenv("MACHINE_SECRET")
    with pytest.raises(SageRaise) as caught, mcp_errors():
        echo(managers(machine(stack)), "x")
    assert caught.value.error.display() == \
        "MCP auth error: [tools.Docs] client_secret_env refers to unset environment variable 'MACHINE_SECRET'"
