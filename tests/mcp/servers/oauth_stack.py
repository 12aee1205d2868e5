"""An OAuth 2.1 authorisation server and an MCP server that requires its tokens, in one process (for
tests/mcp/test_oauth.py).

Both listen on free ports of 127.0.0.1; once they do, the process prints one JSON line
`{"as": "http://127.0.0.1:A", "mcp": "http://127.0.0.1:B/mcp"}` to stdout. It exits when its stdin ends,
so it never outlives the test run that started it, however that run ends.

The authorisation server (written out here, so that every check is visible) publishes RFC 8414 metadata,
registers clients dynamically (RFC 7591), knows one pre-registered client `sage-preregistered`, runs the
authorisation-code flow with PKCE S256 (the verifier is checked against the challenge), approves every
authorisation request at once by redirecting to the client's loopback callback (any port, RFC 8252
§7.3), and refreshes access tokens (rotating the refresh token). `/alt/authorize` and `/alt/token` are the
same endpoints under other paths, to test endpoint overrides. A confidential machine client
`sage-machine` (secret `machine-secret`, sent with HTTP Basic) gets tokens with the client-credentials grant. `GET /_stats` returns counters and what the
last requests carried; `POST /_control` sets `access_lifetime` (seconds) and `reject` (the MCP server then
refuses every token).

The MCP server is an SDK `MCPServer` with `AuthSettings` (resource-server role: protected-resource
metadata, `WWW-Authenticate` challenges) and a token verifier reading the tokens issued above.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import socket
import sys
import time
from urllib.parse import urlencode, urlsplit

import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

PREREGISTERED = "sage-preregistered"
MACHINE, MACHINE_SECRET = "sage-machine", "machine-secret"


class State:
    def __init__(self) -> None:
        self.clients: dict[str, dict] = {PREREGISTERED: {"redirect_uris": ["http://127.0.0.1/callback"]}}
        self.codes: dict[str, dict] = {}
        self.access: dict[str, dict] = {}
        self.refresh: dict[str, dict] = {}
        self.access_lifetime = 3600
        self.reject = False
        self.stats: dict[str, object] = {"register": 0, "authorize": 0, "authorize_alt": 0, "token_code": 0,
                                         "token_refresh": 0, "token_alt": 0, "pkce_failures": 0,
                                         "token_client_credentials": 0, "refused": 0}


STATE = State()


def _loopback_match(registered: list[str], given: str) -> bool:
    """RFC 8252 §7.3: a loopback redirect URI matches a registered one whatever its port."""
    g = urlsplit(given)
    for uri in registered:
        r = urlsplit(uri)
        if (r.scheme, r.hostname, r.path) == (g.scheme, g.hostname, g.path) and g.hostname == "127.0.0.1":
            return True
    return given in registered


def _error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


def make_auth_app(issuer: str) -> Starlette:
    async def metadata(request: Request) -> Response:
        return JSONResponse({
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        })

    async def register(request: Request) -> Response:
        body = await request.json()
        uris = body.get("redirect_uris") or []
        if not uris:
            return _error(400, "invalid_redirect_uri", "redirect_uris is required")
        client_id = "client-" + secrets.token_hex(8)
        STATE.clients[client_id] = {"redirect_uris": uris}
        STATE.stats["register"] += 1
        STATE.stats["registered_name"] = body.get("client_name")
        return JSONResponse({"client_id": client_id, "client_id_issued_at": int(time.time()),
                             "redirect_uris": uris, "token_endpoint_auth_method": "none",
                             "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]},
                            status_code=201)

    async def authorize(request: Request) -> Response:
        q = request.query_params
        STATE.stats["authorize_alt" if request.url.path.startswith("/alt/") else "authorize"] += 1
        STATE.stats["last_scope"] = q.get("scope")
        STATE.stats["last_redirect_uri"] = q.get("redirect_uri")
        STATE.stats["last_client_id"] = q.get("client_id")
        client = STATE.clients.get(q.get("client_id", ""))
        redirect = q.get("redirect_uri", "")
        if client is None:
            return _error(400, "invalid_client", "unknown client")
        if not _loopback_match(client["redirect_uris"], redirect):
            return _error(400, "invalid_request", "redirect_uri not registered")
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" \
                or not q.get("code_challenge"):
            return RedirectResponse(f"{redirect}?{urlencode({'error': 'invalid_request', 'state': q.get('state', '')})}")
        code = secrets.token_urlsafe(24)
        STATE.codes[code] = {"client_id": q["client_id"], "redirect_uri": redirect,
                             "challenge": q["code_challenge"], "scope": q.get("scope"), "resource": q.get("resource")}
        answer = {"code": code, "state": q.get("state", ""), "iss": issuer}
        return RedirectResponse(f"{redirect}?{urlencode(answer)}", status_code=302)

    def issue(client_id: str, scope: str | None, resource: str | None) -> dict:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        STATE.access[access] = {"client_id": client_id, "scope": scope, "resource": resource,
                                "expires_at": time.time() + STATE.access_lifetime}
        STATE.refresh[refresh] = {"client_id": client_id, "scope": scope, "resource": resource}
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": STATE.access_lifetime,
                  "refresh_token": refresh}
        if scope:
            answer["scope"] = scope
        return answer

    async def token(request: Request) -> Response:
        form = await request.form()
        if request.url.path.startswith("/alt/"):
            STATE.stats["token_alt"] += 1
        grant = form.get("grant_type")
        if grant == "authorization_code":
            STATE.stats["token_code"] += 1
            record = STATE.codes.pop(str(form.get("code", "")), None)
            if record is None:
                return _error(400, "invalid_grant", "unknown or used code")
            if form.get("client_id") != record["client_id"] or form.get("redirect_uri") != record["redirect_uri"]:
                return _error(400, "invalid_grant", "client_id or redirect_uri differs from the authorisation")
            verifier = str(form.get("code_verifier", ""))
            digest = hashlib.sha256(verifier.encode("ascii")).digest()
            if not verifier or base64.urlsafe_b64encode(digest).decode().rstrip("=") != record["challenge"]:
                STATE.stats["pkce_failures"] += 1
                return _error(400, "invalid_grant", "PKCE verification failed")
            return JSONResponse(issue(record["client_id"], record["scope"], record["resource"]))
        if grant == "refresh_token":
            STATE.stats["token_refresh"] += 1
            record = STATE.refresh.pop(str(form.get("refresh_token", "")), None)
            if record is None or record["client_id"] != form.get("client_id"):
                return _error(400, "invalid_grant", "unknown refresh token")
            return JSONResponse(issue(record["client_id"], record["scope"], record["resource"]))
        if grant == "client_credentials":
            expected = "Basic " + base64.b64encode(f"{MACHINE}:{MACHINE_SECRET}".encode()).decode()
            if request.headers.get("authorization") != expected:
                return _error(401, "invalid_client", "unknown client or wrong secret")
            STATE.stats["token_client_credentials"] += 1
            answer = issue(MACHINE, form.get("scope"), form.get("resource"))
            del answer["refresh_token"]
            return JSONResponse(answer)
        return _error(400, "unsupported_grant_type", str(grant))

    async def stats(request: Request) -> Response:
        return JSONResponse(STATE.stats)

    async def control(request: Request) -> Response:
        body = await request.json()
        STATE.access_lifetime = int(body.get("access_lifetime", STATE.access_lifetime))
        STATE.reject = bool(body.get("reject", STATE.reject))
        return JSONResponse({"ok": True})

    return Starlette(routes=[
        Route("/.well-known/oauth-authorization-server", metadata),
        Route("/register", register, methods=["POST"]),
        Route("/authorize", authorize),
        Route("/alt/authorize", authorize),
        Route("/token", token, methods=["POST"]),
        Route("/alt/token", token, methods=["POST"]),
        Route("/_stats", stats),
        Route("/_control", control, methods=["POST"]),
    ])


class Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        record = STATE.access.get(token)
        if record is None or STATE.reject or record["expires_at"] < time.time():
            STATE.stats["refused"] += 1
            return None
        return AccessToken(token=token, client_id=record["client_id"], scopes=(record["scope"] or "").split(),
                           expires_at=int(record["expires_at"]), resource=record["resource"])


def make_mcp_app(issuer: str, resource: str) -> Starlette:
    server = MCPServer("oauth-tools", auth=AuthSettings(issuer_url=issuer, resource_server_url=resource,
                                                        validate_token_resource=True),
                       token_verifier=Verifier())

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    def whoami() -> str:
        """The client id of the calling token."""
        token = get_access_token()
        return token.client_id if token is not None else ""

    return server.streamable_http_app()


def _bound() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


async def main() -> None:
    as_sock, mcp_sock = _bound(), _bound()
    issuer = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
    resource = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
    servers = [
        uvicorn.Server(uvicorn.Config(make_auth_app(issuer), log_level="warning")),
        uvicorn.Server(uvicorn.Config(make_mcp_app(issuer, resource), log_level="warning")),
    ]
    tasks = [asyncio.create_task(servers[0].serve(sockets=[as_sock])),
             asyncio.create_task(servers[1].serve(sockets=[mcp_sock]))]
    while not all(s.started for s in servers):
        await asyncio.sleep(0.02)
    sys.stdout.write(json.dumps({"as": issuer, "mcp": resource}) + "\n")
    sys.stdout.flush()
    await asyncio.to_thread(sys.stdin.read)
    for server in servers:
        server.should_exit = True
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main())
