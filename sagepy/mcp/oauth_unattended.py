"""OAuth without a person (SPEC §8.2): `grant = "client_credentials"`, with a client secret
(`client_secret_env`: `client_secret_basic`, or `client_secret_post` when the authorisation server allows
only that) or a private key (`private_key_file`: a `private_key_jwt` assertion signed with
`signing_algorithm`).

The grant itself is the MCP SDK's (`ClientCredentialsOAuthProvider`, `PrivateKeyJWTOAuthProvider`):
discovery, the token request, the resource parameter. This module adds what sagepy's interactive flow
(oauth.py) adds too — the token file with the access token's expiry, failures as `McpFailure("auth error")`
recorded on the connection's `HttpStatus` — and renews the token *before* it expires, so that a
long-running worker never sends a request with a token the server is about to refuse. Nothing is printed
or opened. Secrets and keys never appear in a message.
"""
from __future__ import annotations

import os
import time
import warnings
from typing import Any, AsyncGenerator

import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (ClientCredentialsOAuthProvider,
                                                           PrivateKeyJWTOAuthProvider, SignedJWTParameters)

from ..grove.servers import ServerConfig
from .references import private_key_reference
from .failures import McpFailure
from .oauth import EXPIRY_MARGIN_S, TokenFile, secret_method, token_path

class _Unattended:
    """The part both client-credentials providers share (a mixin in front of the SDK's provider)."""

    config: ServerConfig
    file: TokenFile
    status: Any
    context: Any
    _initialized: bool

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        if self.context.current_tokens is not None and self.file.expires_at is not None:
            self.context.token_expiry_time = self.file.expires_at

    def _renewal_due(self) -> bool:
        """A token that expires within the margin is renewed before the request rather than refused by the
        server; renewing needs the metadata discovered in this process (a token cached by an earlier run is
        renewed the first time the server refuses it instead)."""
        context = self.context
        tokens = context.current_tokens
        if not self._initialized or tokens is None or context.oauth_metadata is None \
                or context.token_expiry_time is None:
            return False
        # A short-lived token is renewed in the second half of its life, not before every request.
        margin = min(EXPIRY_MARGIN_S, int(tokens.expires_in) / 2) if tokens.expires_in else EXPIRY_MARGIN_S
        return time.time() >= context.token_expiry_time - margin

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        try:
            async with self.context.lock:
                if self._renewal_due():
                    self.context.clear_tokens()
                    response = yield await self._exchange_token_client_credentials()  # type: ignore[attr-defined]
                    await self._handle_token_response(response)  # type: ignore[attr-defined]
            flow = super()._auth_flow(request)  # type: ignore[misc]
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
        except McpFailure as failure:
            raise self._record(failure) from None
        except OAuthFlowError as exc:
            raise self._record(McpFailure(
                "auth error", f"client-credentials token request for '{self.config.name}' failed: {exc}")) from None

    def _record(self, failure: McpFailure) -> McpFailure:
        self.status.oauth = failure
        return failure

    def _get_token_endpoint(self) -> str:
        if self.config.token_url:
            return self.config.token_url
        if self.context.oauth_metadata is None and self.file.token_endpoint:
            return self.file.token_endpoint
        endpoint = super()._get_token_endpoint()  # type: ignore[misc]
        self.file.token_endpoint = endpoint
        return endpoint


class SecretClient(_Unattended, ClientCredentialsOAuthProvider):
    """Client credentials with a client secret."""

    async def _exchange_token_client_credentials(self) -> httpx2.Request:
        self.context.client_info.token_endpoint_auth_method = secret_method(self.context.oauth_metadata)
        return await super()._exchange_token_client_credentials()


class KeyClient(_Unattended, PrivateKeyJWTOAuthProvider):
    """Client credentials with a `private_key_jwt` assertion."""


def client_credentials_provider(config: ServerConfig, root: str, status: Any) -> Any:
    """The httpx2 auth of a server with `grant = "client_credentials"`."""
    client_id = _variable(config, "client_id_env", config.client_id_env or "")
    storage = TokenFile(token_path(root, config.name), config.url or "", None)
    scope = " ".join(config.scopes) or None
    with warnings.catch_warnings():
        # The SDK asks for the authorisation server's issuer; it is discovered from the server's metadata.
        warnings.simplefilter("ignore")
        if config.client_secret_env is not None:
            secret = _variable(config, "client_secret_env", config.client_secret_env)
            provider: Any = SecretClient(config.url or "", storage, client_id, secret, scope=scope)
        else:
            key = private_key(config, root)
            assertion = SignedJWTParameters(issuer=client_id, subject=client_id, signing_key=key,
                                            signing_algorithm=config.signing_algorithm)
            provider = KeyClient(config.url or "", storage, client_id, assertion.create_assertion_provider(),
                                 scope=scope)
    provider.config = config
    provider.file = storage
    provider.status = status
    return provider


def _variable(config: ServerConfig, key: str, name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise McpFailure("auth error", f"{config.table} {key} refers to unset environment variable '{name}'")
    return value


def private_key(config: ServerConfig, root: str) -> str:
    """The PEM text of `private_key_file`: a file (relative to the project root) or a `$NAME` reference to a
    variable holding it; checked by signing a throw-away assertion, so a bad key fails the connection with
    its reason before any request is sent."""
    written = config.private_key_file or ""
    name = private_key_reference(config)
    if name is not None:
        pem = os.environ.get(name)
        if pem is None:
            raise McpFailure("config error", f"{config.table[:-1]}.private_key_file] {name} refers to unset "
                                             f"environment variable '{name}'")
        where = f"the variable {name}"
    else:
        path = os.path.join(root, written)
        try:
            with open(path, encoding="utf-8") as fh:
                pem = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise McpFailure("auth error", f"{config.table} private_key_file {written}: {reason}") from None
        where = written
    import jwt
    try:
        jwt.encode({"check": True}, pem, algorithm=config.signing_algorithm)
    except Exception as exc:  # noqa: BLE001 - pyjwt and cryptography raise many types; the key is never shown
        raise McpFailure("auth error", f"{config.table} private_key_file: {where} does not hold a "
                                       f"{config.signing_algorithm} private key in PEM form "
                                       f"({type(exc).__name__})") from None
    return pem
