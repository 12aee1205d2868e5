"""OAuth 2.1 (authorisation code + PKCE S256) for Streamable HTTP servers with `auth = "oauth"` (SPEC §8.2).

The flow itself is the MCP SDK's `OAuthClientProvider`: discovery of the protected-resource and
authorisation-server metadata, dynamic client registration, PKCE, the code exchange and refresh. This
module supplies what the SDK leaves to its user, and patches the few places where sagepy needs more:

* `TokenFile`, the SDK's `TokenStorage`: tokens and client registration in `<root>/.sage/oauth/<Name>.json`
  (directory 0700, file 0600), together with the access token's expiry time and the token endpoint. The
  SDK keeps both only in memory, so without them a token cached by an earlier run would never be known
  to be expired, and could not be refreshed before the metadata is discovered again.
* the login: a redirect listener on `http://127.0.0.1:<port>/callback`, the authorisation URL printed to
  stderr and opened with `SAGE_OAUTH_OPEN` or the system browser; refused up front when nobody can answer
  (stdin not a terminal and no `SAGE_OAUTH_OPEN`);
* the overrides `client_id_env`, `authorization_url` and `token_url`;
* failures as `McpFailure("auth error", …)`, also recorded on the connection's `HttpStatus`: the SDK's
  transport does not carry an exception raised inside a request's auth flow out intact.

Tokens and codes never appear in a message, a log line or a trace.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import socket
import sys
import time
import webbrowser
from contextlib import AbstractContextManager
from typing import Any, AsyncGenerator, Callable
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, ValidationError

from ..secrecy import open_private_log, private_directory
from ..grove.servers import ServerConfig
from .failures import McpFailure

# A cached access token this close to its expiry counts as expired, so it is refreshed before use rather
# than rejected by the server halfway through a request (the SDK answers a 401 with a new login, not a
# refresh).
EXPIRY_MARGIN_S = 10.0
# How long a login may take, from opening the authorisation URL to the redirect reaching the listener.
LOGIN_TIMEOUT_S = 300.0
_FILE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_GRANT_TYPES = ["authorization_code", "refresh_token"]
# Watchers of SAGE_OAUTH_OPEN commands: a command may outlive its login (a browser), and is reaped when it
# exits; the set keeps the watching tasks alive until then.
_background: set[asyncio.Task] = set()


def secret_method(metadata: Any) -> str:
    """How a confidential client sends its secret: `client_secret_basic`, unless the authorisation server's
    metadata lists `client_secret_post` and not basic (§8.2)."""
    supported = getattr(metadata, "token_endpoint_auth_methods_supported", None) or []
    if "client_secret_post" in supported and "client_secret_basic" not in supported:
        return "client_secret_post"
    return "client_secret_basic"


def token_path(root: str, name: str) -> str:
    return os.path.join(root, ".sage", "oauth", _FILE_NAME.sub("_", name) + ".json")


def interactive(opener: str | None) -> bool:
    """Whether a login can be answered: a command to follow the URL, or a person at the terminal."""
    if opener:
        return True
    return sys.stdin is not None and sys.stdin.isatty()


class TokenFile:
    """The SDK's `TokenStorage` on `.sage/oauth/<Name>.json`.

    A file written for another server URL, or one that cannot be read, counts as empty. With
    `client_id_env` the client is the pre-registered one named by that variable, whatever the file says.
    """

    def __init__(self, path: str, server_url: str, fixed_client: OAuthClientInformationFull | None) -> None:
        self.path = path
        self.server_url = server_url
        self.fixed_client = fixed_client
        data = self._read()
        self.tokens: dict | None = data.get("tokens")
        self.client_info: dict | None = data.get("client_info")
        expires_at = data.get("expires_at")
        self.expires_at = float(expires_at) if isinstance(expires_at, (int, float)) else None
        self.token_endpoint: str | None = data.get("token_endpoint")

    def _read(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("server_url") != self.server_url:
            return {}
        return data

    def _write(self) -> None:
        directory = os.path.dirname(self.path)
        data = {"server_url": self.server_url, "client_info": self.client_info, "tokens": self.tokens,
                "expires_at": self.expires_at, "token_endpoint": self.token_endpoint}
        temporary = self.path + ".tmp"
        try:
            private_directory(directory)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(fd, 0o600)  # the mode of open() applies only to a file it creates
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2)
            os.replace(temporary, self.path)
        except OSError as exc:
            raise McpFailure("auth error", f"cannot write {self.path}: {exc.strerror or exc}") from None

    async def get_tokens(self) -> OAuthToken | None:
        if self.tokens is None:
            return None
        try:
            return OAuthToken.model_validate(self.tokens)
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens.model_dump(mode="json", exclude_none=True)
        self.expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        self._write()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.fixed_client is not None:
            return self.fixed_client
        if self.client_info is None:
            return None
        try:
            return OAuthClientInformationFull.model_validate(self.client_info)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info.model_dump(mode="json", exclude_none=True)
        self._write()


class CallbackListener:
    """The redirect listener on 127.0.0.1: the first `/callback` with a code or an error ends the login."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = 0
        self.result: asyncio.Future = asyncio.get_running_loop().create_future()
        self._server: asyncio.AbstractServer | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self, port: int, fixed: bool) -> None:
        """Listen on `port`; when it is taken and not `fixed` (redirect_port = 0), on any free port."""
        try:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        except OSError as exc:
            if fixed:
                raise McpFailure("auth error", f"cannot listen for the OAuth redirect on 127.0.0.1:{port}: "
                                               f"{exc.strerror or exc}") from None
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if not self.result.done():
            self.result.cancel()
        elif not self.result.cancelled():
            self.result.exception()  # seen: an unread failure would be reported by asyncio at exit
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
            status, text = self._accept(target)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, IndexError,
                ConnectionError):
            status, text = "400 Bad Request", "Bad request."
        body = f"<!doctype html><title>sagepy</title><p>{text}</p>\n".encode()
        try:
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        except ConnectionError:
            pass

    def _accept(self, target: str) -> tuple[str, str]:
        parts = urlsplit(target)
        if parts.path != "/callback":
            return "404 Not Found", "Not found."
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if self.result.done():
            return "200 OK", "This login has already been handled; you can close this window."
        if "error" in query:
            reason = query["error"] + (f" ({query['error_description']})" if "error_description" in query else "")
            self.result.set_exception(McpFailure(
                "auth error", f"the authorisation server refused the login for '{self.name}': {reason}"))
            return "200 OK", "Login failed; you can close this window."
        if "code" not in query:
            return "400 Bad Request", "The redirect carries no authorisation code."
        self.result.set_result(AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                                       iss=query.get("iss")))
        return "200 OK", "Login complete; you can close this window and return to sagepy."


class SageOAuthProvider(OAuthClientProvider):
    """The SDK's provider with sagepy's login, token file, endpoint overrides and failure reporting.

    The overridden methods are private to the SDK (mcp 2.3): a change there shows up as a failing test in
    tests/mcp/test_oauth.py.
    """

    def __init__(self, config: ServerConfig, storage: TokenFile, metadata: OAuthClientMetadata, status: Any,
                 pause: Callable[[], AbstractContextManager], log_path: str, opener: str | None) -> None:
        super().__init__(config.url or "", metadata, storage, redirect_handler=self._open_url,
                         callback_handler=self._await_code, client_metadata_url=config.client_metadata_url)
        self.config = config
        self.file = storage
        self.status = status
        self.pause = pause
        self.log_path = log_path
        self.opener = opener   # SAGE_OAUTH_OPEN
        self.listener: CallbackListener | None = None
        self.logins = 0
        # Set when the server refused a token right after a login: logging in again would only loop.
        self.refused_status: int | None = None

    # ------------------------------------------------------------ the flow

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        logins = self.logins
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is request and self.logins != logins:
                    self.status.code = None  # the 401 that started this login is answered now
                response = yield outgoing
                if outgoing is request and self.logins != logins and response.status_code in (401, 403):
                    self.refused_status = response.status_code
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except McpFailure as failure:
            raise self._record(failure) from None
        except OAuthFlowError as exc:
            raise self._record(McpFailure("auth error", f"OAuth login for '{self.config.name}' failed: {exc}")) \
                from None
        finally:
            await flow.aclose()

    def _record(self, failure: McpFailure) -> McpFailure:
        self.status.oauth = failure
        return failure

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None and self.file.expires_at is not None:
            self.context.token_expiry_time = self.file.expires_at - EXPIRY_MARGIN_S

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        if self.refused_status is not None:
            raise McpFailure("auth error", f"server returned HTTP {self.refused_status}")
        if not interactive(self.opener):
            raise McpFailure("auth error", f"interactive login required for '{self.config.name}'")
        if self.config.scopes:  # configured scopes win over the ones the SDK picked from the metadata
            self.context.client_metadata.scope = " ".join(self.config.scopes)
        listener = CallbackListener(self.config.name)
        wanted = urlsplit(str(self.context.client_metadata.redirect_uris[0])).port or 0
        await listener.start(wanted, fixed=self.config.redirect_port != 0)
        self.context.client_metadata.redirect_uris = [AnyUrl(listener.uri)]
        self.listener = listener
        try:
            with self.pause():
                grant = await super()._perform_authorization_code_grant()
        finally:
            self.listener = None
            await listener.close()
        self.logins += 1
        return grant

    def _get_token_endpoint(self) -> str:
        if self.config.token_url:
            return self.config.token_url
        if self.context.oauth_metadata is None and self.file.token_endpoint:
            return self.file.token_endpoint
        return super()._get_token_endpoint()

    async def _exchange_token_authorization_code(self, auth_code: str, code_verifier: str) -> httpx2.Request:
        client = self.context.client_info
        if client is not None and client.client_secret and client is self.file.fixed_client:
            client.token_endpoint_auth_method = secret_method(self.context.oauth_metadata)
        request = await super()._exchange_token_authorization_code(auth_code, code_verifier)
        self.file.token_endpoint = str(request.url)
        return request

    async def _refresh_token(self) -> httpx2.Request:
        request = await super()._refresh_token()
        endpoint = self._get_token_endpoint()
        if str(request.url) == endpoint:
            return request
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        return httpx2.Request("POST", endpoint, content=request.content, headers=headers)

    # ------------------------------------------------------------ the login

    async def _open_url(self, url: str) -> None:
        """Print the authorisation URL and open it; the listener then waits for the redirect."""
        if self.config.authorization_url:
            query = urlsplit(url).query
            joiner = "&" if "?" in self.config.authorization_url else "?"
            url = self.config.authorization_url + joiner + query
        sys.stderr.write(f"MCP server '{self.config.name}' needs authorisation; opening this URL to log in:\n"
                         f"  {url}\n")
        sys.stderr.flush()
        if self.opener:
            await self._run_opener(self.opener, url)
        else:
            await asyncio.to_thread(webbrowser.open, url)

    async def _run_opener(self, command: str, url: str) -> None:
        """Start `SAGE_OAUTH_OPEN <url>`; if it fails before the redirect arrives, so does the login."""
        listener = self.listener
        try:
            argv = shlex.split(command) + [url]
        except ValueError as exc:
            raise McpFailure("auth error", f"SAGE_OAUTH_OPEN cannot be parsed: {exc}") from None
        with open_private_log(self.log_path) as log:
            log.write(f"=== OAuth login: running SAGE_OAUTH_OPEN ({argv[0]})\n")
            log.flush()
            try:
                process = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                               stdout=log, stderr=log)
            except OSError as exc:
                raise McpFailure("auth error", f"cannot run SAGE_OAUTH_OPEN command '{argv[0]}': "
                                               f"{exc.strerror or exc}") from None
        task = asyncio.ensure_future(self._watch_opener(process, listener))
        _background.add(task)
        task.add_done_callback(_background.discard)

    async def _watch_opener(self, process: asyncio.subprocess.Process, listener: CallbackListener | None) -> None:
        status = await process.wait()
        if status != 0 and listener is not None and listener is self.listener and not listener.result.done():
            listener.result.set_exception(McpFailure(
                "auth error", f"SAGE_OAUTH_OPEN command exited with status {status} before the login completed"))

    async def _await_code(self) -> AuthorizationCodeResult:
        listener = self.listener
        assert listener is not None  # the SDK asks for the code only inside _perform_authorization_code_grant
        try:
            return await asyncio.wait_for(asyncio.shield(listener.result), LOGIN_TIMEOUT_S)
        except asyncio.TimeoutError:
            raise McpFailure("auth error", f"login for '{self.config.name}' did not complete within "
                                           f"{int(LOGIN_TIMEOUT_S)} s") from None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def oauth_provider(config: ServerConfig, root: str, log_path: str, status: Any,
                   pause: Callable[[], AbstractContextManager], client_name: str,
                   opener: str | None) -> SageOAuthProvider:
    """The httpx2 auth of one connection to a server with `auth = "oauth"`.

    `status` is the connection's `HttpStatus` (failures are recorded on it), `pause` a context manager
    that stops the connection's timers while a person logs in, `opener` the SAGE_OAUTH_OPEN command.
    """
    port = config.redirect_port or _free_port()
    redirect = f"http://127.0.0.1:{port}/callback"
    fixed_client = None
    if config.client_id_env:
        client_id = os.environ.get(config.client_id_env)
        if client_id is None:
            raise McpFailure("auth error", f"{config.table} client_id_env refers to unset environment variable "
                                           f"'{config.client_id_env}'")
        secret = None
        if config.client_secret_env:   # a pre-registered confidential client
            secret = os.environ.get(config.client_secret_env)
            if secret is None:
                raise McpFailure("auth error", f"{config.table} client_secret_env refers to unset environment "
                                               f"variable '{config.client_secret_env}'")
        fixed_client = OAuthClientInformationFull(client_id=client_id, client_secret=secret,
                                                  redirect_uris=[AnyUrl(redirect)],
                                                  token_endpoint_auth_method="client_secret_basic" if secret
                                                  else "none", grant_types=_GRANT_TYPES)
    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl(redirect)], client_name=client_name,
                                   grant_types=_GRANT_TYPES, response_types=["code"],
                                   token_endpoint_auth_method="none",
                                   scope=" ".join(config.scopes) or None)
    storage = TokenFile(token_path(root, config.name), config.url or "", fixed_client)
    try:
        return SageOAuthProvider(config, storage, metadata, status, pause, log_path, opener)
    except ValueError:   # the SDK's check of client_metadata_url
        raise McpFailure("config error", f"{config.table} client_metadata_url must be an https URL with a path, "
                                         f"got '{config.client_metadata_url}'") from None
