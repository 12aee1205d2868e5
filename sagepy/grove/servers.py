"""The MCP tables of grove.toml: `[tools.<Name>]` and `[mcp]` (SPEC §8.2, §11), and the same keys as a JSON
object for `mcp_connect` (§8.5). Which table a tool block binds to is sagepy.binding's rule.

Validation collects every problem as an E090 diagnostic naming the file, the table and the key, with a
did-you-mean hint for a misspelt key; a table with errors is left out of the result. The `$` references
of `args`, `env` and `headers` are kept as written here and resolved only when a connection opens
(sagepy.mcp.references), so an unset variable fails the connection that needs it, never the whole program.
Secret values (env and header values, tokens) never appear in a message.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..diagnostics import Diagnostic
from ..secrecy import looks_like_token
from .keys import (Collector, apply_keys, boolean, one_of, port, positive_int, string, string_list, string_table,
                   table_of, toml_type)

TRANSPORTS = ("stdio", "http", "inprocess")
AUTH_MODES = ("none", "bearer", "oauth")
PROTOCOLS = ("auto", "legacy", "2026-07-28")
SAFETY_CLASSES = ("read_only", "idempotent", "destructive")
ELICITATION_MODES = ("prompt", "decline", "defaults", "auto")
GRANTS = ("authorization_code", "client_credentials")
SIGNING_ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA")


class ServerConfig:
    """One validated `[tools.<Name>]` entry (or `mcp_connect` object). Defaults follow SPEC §8.2."""

    __slots__ = (
        "name", "transport", "command", "args", "env", "inherit_env", "cwd", "url", "headers", "auth",
        "token_env", "client_id_env", "authorization_url", "token_url", "scopes", "redirect_port", "module",
        "object", "timeout_ms", "connect_timeout_ms", "max_result_bytes", "protocol", "trust_annotations",
        "safety", "elicitation", "sampling", "table", "grant", "client_secret_env", "private_key_file",
        "signing_algorithm", "client_metadata_url",
    )

    def __init__(self, name: str, table: str) -> None:
        self.name = name
        # How messages refer to this entry: "[tools.Calendar]", or the handle of a dynamic connection.
        self.table = table
        self.transport = "stdio"
        self.command: str | None = None
        self.args: list[str] = []
        self.env: dict[str, str] = {}
        self.inherit_env = False
        self.cwd: str | None = None
        self.url: str | None = None
        self.headers: dict[str, str] = {}
        self.auth = "none"
        self.token_env: str | None = None
        self.client_id_env: str | None = None
        self.authorization_url: str | None = None
        self.token_url: str | None = None
        self.scopes: list[str] = []
        self.grant = "authorization_code"
        self.client_secret_env: str | None = None
        self.private_key_file: str | None = None
        self.signing_algorithm = "ES256"
        self.client_metadata_url: str | None = None
        self.redirect_port = 0
        self.module: str | None = None
        self.object = "server"
        self.timeout_ms = 30000
        self.connect_timeout_ms = 15000
        self.max_result_bytes = 1048576
        self.protocol = "auto"
        self.trust_annotations = True
        self.safety: dict[str, str] = {}
        self.elicitation: str | None = None
        self.sampling = False

    def __repr__(self) -> str:
        return f"ServerConfig({self.name!r}, {self.transport})"


class McpSettings:
    """The `[mcp]` table: client identity and the default elicitation mode (§8.7, §8.9); and `oauth_open`,
    the command of SAGE_OAUTH_OPEN that follows OAuth authorisation URLs (§8.2), from the session."""

    __slots__ = ("client_name", "client_version", "elicitation", "oauth_open")

    def __init__(self, client_name: str | None = None, client_version: str | None = None,
                 elicitation: str = "auto", oauth_open: str | None = None) -> None:
        from ..version import __version__
        self.client_name = client_name or "sagepy"
        self.client_version = client_version or __version__
        self.elicitation = elicitation
        self.oauth_open = oauth_open


# key -> (parser returning None on a bad value, description of the expected value)
_SERVER_KEYS: dict[str, tuple[Any, str]] = {
    "transport": (one_of(TRANSPORTS), 'one of "stdio", "http", "inprocess"'),
    "command": (string, "a string"),
    "args": (string_list, "an array of strings"),
    "env": (string_table, "a table of strings"),
    "inherit_env": (boolean, "true or false"),
    "cwd": (string, "a string"),
    "url": (string, "a string"),
    "headers": (string_table, "a table of strings"),
    "auth": (one_of(AUTH_MODES), 'one of "none", "bearer", "oauth"'),
    "token_env": (string, "a string"),
    "client_id_env": (string, "a string"),
    "authorization_url": (string, "a string"),
    "token_url": (string, "a string"),
    "scopes": (string_list, "an array of strings"),
    "grant": (one_of(GRANTS), 'one of "authorization_code", "client_credentials"'),
    "client_secret_env": (string, "a string"),
    "private_key_file": (string, "a string"),
    "signing_algorithm": (one_of(SIGNING_ALGORITHMS), "a JWS algorithm such as \"ES256\" or \"RS256\""),
    "client_metadata_url": (string, "a string"),
    "redirect_port": (port, "an integer from 0 to 65535"),
    "module": (string, "a string"),
    "object": (string, "a string"),
    "timeout_ms": (positive_int, "a positive integer"),
    "connect_timeout_ms": (positive_int, "a positive integer"),
    "max_result_bytes": (positive_int, "a positive integer"),
    "protocol": (one_of(PROTOCOLS), 'one of "auto", "legacy", "2026-07-28"'),
    "trust_annotations": (boolean, "true or false"),
    "safety": (table_of(SAFETY_CLASSES), 'a table of "read_only", "idempotent" or "destructive"'),
    "elicitation": (one_of(ELICITATION_MODES), 'one of "prompt", "decline", "defaults", "auto"'),
    "sampling": (boolean, "true or false"),
}

_MCP_KEYS: dict[str, tuple[Any, str]] = {
    "client_name": (string, "a string"),
    "client_version": (string, "a string"),
    "elicitation": (one_of(ELICITATION_MODES), 'one of "prompt", "decline", "defaults", "auto"'),
}


# ---------------------------------------------------------------- validation

def _finish(config: ServerConfig, data: Mapping[str, Any], table: str, report: Any) -> bool:
    """Transport inference and the cross-key rules of §8.2 / §11."""
    if "transport" not in data:
        if config.command is not None:
            config.transport = "stdio"
        elif config.url is not None:
            config.transport = "http"
        elif config.module is not None:
            config.transport = "inprocess"
        else:
            report(f"[{table}] needs `command` (stdio), `url` (http) or `module` (inprocess)", None, None)
            return False
    required = {"stdio": "command", "http": "url", "inprocess": "module"}[config.transport]
    if getattr(config, required) is None:
        report(f'[{table}] with transport "{config.transport}" needs `{required}`', "transport", None)
        return False
    if config.auth == "bearer" and config.token_env is None:
        report(f'[{table}] with auth = "bearer" needs `token_env`', "auth", None)
        return False
    if not _oauth_keys_fit(config, data, table, report):
        return False
    if config.token_env is not None and looks_like_token(config.token_env):
        # Neither the message nor the place points at the value: the diagnostic would quote its line.
        config.token_env = None
        report(f"[{table}] token_env must be the name of the environment variable that holds the token, not "
               "the token itself (its value looks like a token, so it is not shown)", None,
               'write token_env = "MY_TOKEN" and put MY_TOKEN=<the token> in .env or the environment')
        return False
    where = _nul_byte_key(config)
    if where is not None:
        report(f"[{table}] {where} contains a NUL byte, which cannot be passed to a process", where, None)
        return False
    return True


_OAUTH_ONLY = ("grant", "client_secret_env", "private_key_file", "client_metadata_url")


def _oauth_keys_fit(config: ServerConfig, data: Mapping[str, Any], table: str, report: Any) -> bool:
    """The OAuth keys of unattended runs (§8.2): only with `auth = "oauth"`; the client-credentials grant
    needs `client_id_env` and exactly one of `client_secret_env` and `private_key_file`."""
    stray = next((key for key in _OAUTH_ONLY if key in data), None)
    if stray is not None and config.auth != "oauth":
        report(f'[{table}] {stray} needs auth = "oauth"', stray, None)
        return False
    if config.grant != "client_credentials":
        return True
    if config.client_id_env is None:
        report(f'[{table}] with grant = "client_credentials" needs `client_id_env`', "grant", None)
        return False
    if (config.client_secret_env is None) == (config.private_key_file is None):
        report(f'[{table}] with grant = "client_credentials" needs exactly one of `client_secret_env` and '
               "`private_key_file`", "grant", None)
        return False
    return True


def _nul_byte_key(config: ServerConfig) -> str | None:
    """The first of command, cwd, args and env that holds a NUL byte (the OS would refuse to start it)."""
    for key in ("command", "cwd"):
        if "\0" in (getattr(config, key) or ""):
            return key
    if any("\0" in arg for arg in config.args):
        return "args"
    for name, value in config.env.items():
        if "\0" in name:
            return "env"      # not `env.<name>`: a message would carry the NUL byte on
        if "\0" in value:
            return f"env.{name}"
    return None


def parse_server(name: str, data: Any, table: str, report: Any) -> ServerConfig | None:
    """Validate one server table (or mcp_connect object). `report(message, key, hint)` receives each problem."""
    if not isinstance(data, dict):
        report(f"[{table}] must be a table, found {toml_type(data)}", None, None)
        return None
    config = ServerConfig(name, f"[{table}]")
    clean = apply_keys(data, _SERVER_KEYS, table, report, config)
    if not clean:
        return None
    return config if _finish(config, data, table, report) else None


def parse_tools_config(config: dict, grove_path: str | None) -> tuple[dict[str, ServerConfig], list[Diagnostic]]:
    """Every `[tools.<Name>]` entry of a grove.toml document, validated (E090 diagnostics for the rest)."""
    out = Collector(grove_path)
    servers: dict[str, ServerConfig] = {}
    tools = config.get("tools")
    if tools is None:
        return servers, out.diagnostics
    if not isinstance(tools, dict):
        out.error(f"{out.file}: [tools] must be a table of MCP servers, found {toml_type(tools)}", "tools")
        return servers, out.diagnostics
    for name, data in tools.items():
        table = f"tools.{name}"

        def report(message: str, key: str | None, hint: str | None, table: str = table) -> None:
            out.error(f"{out.file}: {message}", table, key, hint)

        server = parse_server(name, data, table, report)
        if server is not None:
            servers[name] = server
    return servers, out.diagnostics


def parse_mcp_settings(config: dict, grove_path: str | None) -> tuple[McpSettings, list[Diagnostic]]:
    """The `[mcp]` table (client identity, elicitation default), validated like `[tools.X]`."""
    out = Collector(grove_path)
    settings = McpSettings()
    data = config.get("mcp")
    if data is None:
        return settings, out.diagnostics
    if not isinstance(data, dict):
        out.error(f"{out.file}: [mcp] must be a table, found {toml_type(data)}", "mcp")
        return settings, out.diagnostics

    def report(message: str, key: str | None, hint: str | None) -> None:
        out.error(f"{out.file}: {message}", "mcp", key, hint)

    apply_keys(data, _MCP_KEYS, "mcp", report, settings)
    return settings, out.diagnostics
