"""MCP server configuration: `[tools.<Name>]` and `[mcp]` of grove.toml (SPEC §8.2, §11), and the same keys
as a JSON object for `mcp_connect` (§8.5).

Validation collects every problem as an E090 diagnostic naming the file, the table and the key, with a
did-you-mean hint for a misspelt key; a table with errors is left out of the result. The `$` references
of `args`, `env` and `headers` are kept as written here and resolved only when a connection opens
(`resolve_env`), so an unset variable fails the connection that needs it, never the whole program.
Secret values (env and header values, tokens) never appear in a message.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

from ..check.symbols import BUILTIN_TOOLS
from ..diagnostics import Diagnostic, did_you_mean
from ..secrecy import looks_like_token
from .failures import McpFailure

TRANSPORTS = ("stdio", "http", "inprocess")
AUTH_MODES = ("none", "bearer", "oauth")
PROTOCOLS = ("auto", "legacy", "2026-07-28")
SAFETY_CLASSES = ("read_only", "idempotent", "destructive")
ELICITATION_MODES = ("prompt", "decline", "defaults", "auto")
GRANTS = ("authorization_code", "client_credentials")
SIGNING_ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA")

_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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
        from .. import __version__
        self.client_name = client_name or "sagepy"
        self.client_version = client_version or __version__
        self.elicitation = elicitation
        self.oauth_open = oauth_open


class AmbiguousBinding(Exception):
    """A tool block whose name matches several `[tools.X]` keys case-insensitively (E090)."""


# ---------------------------------------------------------------- key table

def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _string_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return list(value)
    return None


def _string_table(value: Any) -> dict[str, str] | None:
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    return None


def _boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _port(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 65535:
        return value
    return None


def _one_of(choices: tuple[str, ...]):
    def parse(value: Any) -> str | None:
        return value if isinstance(value, str) and value in choices else None
    parse.choices = choices  # type: ignore[attr-defined]
    return parse


def _safety_table(value: Any) -> dict[str, str] | None:
    table = _string_table(value)
    if table is None or any(v not in SAFETY_CLASSES for v in table.values()):
        return None
    return table


# key -> (parser returning None on a bad value, description of the expected value)
_SERVER_KEYS: dict[str, tuple[Any, str]] = {
    "transport": (_one_of(TRANSPORTS), 'one of "stdio", "http", "inprocess"'),
    "command": (_string, "a string"),
    "args": (_string_list, "an array of strings"),
    "env": (_string_table, "a table of strings"),
    "inherit_env": (_boolean, "true or false"),
    "cwd": (_string, "a string"),
    "url": (_string, "a string"),
    "headers": (_string_table, "a table of strings"),
    "auth": (_one_of(AUTH_MODES), 'one of "none", "bearer", "oauth"'),
    "token_env": (_string, "a string"),
    "client_id_env": (_string, "a string"),
    "authorization_url": (_string, "a string"),
    "token_url": (_string, "a string"),
    "scopes": (_string_list, "an array of strings"),
    "grant": (_one_of(GRANTS), 'one of "authorization_code", "client_credentials"'),
    "client_secret_env": (_string, "a string"),
    "private_key_file": (_string, "a string"),
    "signing_algorithm": (_one_of(SIGNING_ALGORITHMS), "a JWS algorithm such as \"ES256\" or \"RS256\""),
    "client_metadata_url": (_string, "a string"),
    "redirect_port": (_port, "an integer from 0 to 65535"),
    "module": (_string, "a string"),
    "object": (_string, "a string"),
    "timeout_ms": (_positive_int, "a positive integer"),
    "connect_timeout_ms": (_positive_int, "a positive integer"),
    "max_result_bytes": (_positive_int, "a positive integer"),
    "protocol": (_one_of(PROTOCOLS), 'one of "auto", "legacy", "2026-07-28"'),
    "trust_annotations": (_boolean, "true or false"),
    "safety": (_safety_table, 'a table of "read_only", "idempotent" or "destructive"'),
    "elicitation": (_one_of(ELICITATION_MODES), 'one of "prompt", "decline", "defaults", "auto"'),
    "sampling": (_boolean, "true or false"),
}

_MCP_KEYS: dict[str, tuple[Any, str]] = {
    "client_name": (_string, "a string"),
    "client_version": (_string, "a string"),
    "elicitation": (_one_of(ELICITATION_MODES), 'one of "prompt", "decline", "defaults", "auto"'),
}


def _toml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


# ---------------------------------------------------------------- grove.toml positions

class _Locator:
    """Finds the line of a table header or key in grove.toml, so that diagnostics can point at it.

    tomllib reports no positions; a line scan is enough for the plain `[tools.X]` / `key = …` layout that
    grove.toml files use, and when it finds nothing the diagnostic simply carries no span.
    """

    def __init__(self, path: str | None) -> None:
        self.lines: list[str] = []
        if path:
            try:
                with open(path, encoding="utf-8") as fh:
                    self.lines = fh.read().split("\n")
            except OSError:
                pass

    def _header_line(self, table: str) -> int | None:
        pattern = re.compile(r"\s*\[\s*" + r"\s*\.\s*".join(map(_key_pattern, table.split("."))) + r"\s*\]")
        for i, line in enumerate(self.lines):
            if pattern.match(line):
                return i
        return None

    def span(self, table: str, key: str | None = None, nested: bool = True) -> tuple | None:
        if nested and key is not None and "." in key:
            sub, entry = key.split(".", 1)
            if self._header_line(f"{table}.{sub}") is not None:
                return self.span(f"{table}.{sub}", entry, nested=False)
            key = sub
        header = self._header_line(table)
        if key is None or header is None:
            if header is None:
                return None
            text = self.lines[header]
            col = len(text) - len(text.lstrip()) + 1
            return (header + 1, col, header + 1, len(text.rstrip()) + 1)
        key_re = re.compile(r"(\s*)(" + _key_pattern(key) + r")\s*=")
        for i in range(header + 1, len(self.lines)):
            line = self.lines[i]
            if line.lstrip().startswith("["):
                break
            m = key_re.match(line)
            if m:
                col = len(m.group(1)) + 1
                return (i + 1, col, i + 1, col + len(m.group(2)))
        return self.span(table)


def _key_pattern(key: str) -> str:
    return "(?:" + re.escape(key) + '|"' + re.escape(key) + '"' + ")"


# ---------------------------------------------------------------- validation

class _Collector:
    def __init__(self, path: str | None) -> None:
        self.path = path
        self.file = os.path.basename(path) if path else "grove.toml"
        self.locator = _Locator(path)
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, table: str, key: str | None = None, hint: str | None = None) -> None:
        span = self.locator.span(table, key)
        self.diagnostics.append(Diagnostic("E090", message, self.path, span, hint=hint))


def _apply_keys(data: Mapping[str, Any], keys: dict[str, tuple[Any, str]], table: str, report: Any,
                target: Any) -> bool:
    """Copy every valid key onto target; report each unknown key or bad value. True when all were valid."""
    clean = True
    for key, value in data.items():
        spec = keys.get(key)
        if spec is None:
            report(f"unknown key `{key}` in [{table}]", key, did_you_mean(key, keys, cutoff=0.6))
            clean = False
            continue
        parse, expected = spec
        parsed = parse(value)
        if parsed is None:
            where = key
            if isinstance(value, dict):   # point at the bad entry of a sub-table such as [tools.X.safety]
                bad = next((k for k, v in value.items() if not isinstance(v, str)
                            or (parse is _safety_table and v not in SAFETY_CLASSES)), None)
                if bad is not None:
                    where = f"{key}.{bad}"
            report(f"[{table}] {key} must be {expected}, found {_describe(value, parse)}", where, None)
            clean = False
            continue
        setattr(target, key, parsed)
    return clean


def _describe(value: Any, parse: Any) -> str:
    if isinstance(value, str) and hasattr(parse, "choices"):
        return f'"{value}"'
    if isinstance(value, dict):
        bad = [k for k, v in value.items()
               if not isinstance(v, str) or (parse is _safety_table and v not in SAFETY_CLASSES)]
        if bad:
            return f"an invalid entry `{bad[0]}`"
    if isinstance(value, list) and value:
        return "an array with a non-string element"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _toml_type(value)


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
        report(f"[{table}] must be a table, found {_toml_type(data)}", None, None)
        return None
    config = ServerConfig(name, f"[{table}]")
    clean = _apply_keys(data, _SERVER_KEYS, table, report, config)
    if not clean:
        return None
    return config if _finish(config, data, table, report) else None


def parse_tools_config(config: dict, grove_path: str | None) -> tuple[dict[str, ServerConfig], list[Diagnostic]]:
    """Every `[tools.<Name>]` entry of a grove.toml document, validated (E090 diagnostics for the rest)."""
    out = _Collector(grove_path)
    servers: dict[str, ServerConfig] = {}
    tools = config.get("tools")
    if tools is None:
        return servers, out.diagnostics
    if not isinstance(tools, dict):
        out.error(f"{out.file}: [tools] must be a table of MCP servers, found {_toml_type(tools)}", "tools")
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
    out = _Collector(grove_path)
    settings = McpSettings()
    data = config.get("mcp")
    if data is None:
        return settings, out.diagnostics
    if not isinstance(data, dict):
        out.error(f"{out.file}: [mcp] must be a table, found {_toml_type(data)}", "mcp")
        return settings, out.diagnostics

    def report(message: str, key: str | None, hint: str | None) -> None:
        out.error(f"{out.file}: {message}", "mcp", key, hint)

    _apply_keys(data, _MCP_KEYS, "mcp", report, settings)
    return settings, out.diagnostics


def bind_tool_block(name: str, servers: Mapping[str, ServerConfig]) -> ServerConfig | None:
    """The server a tool block binds to (§8.1): the exact key, else the one key equal ignoring case.

    The built-in tool names bind by exact key only. Raises AmbiguousBinding when two keys match.
    """
    if name in servers:
        return servers[name]
    if name in BUILTIN_TOOLS:
        return None
    matches = [key for key in servers if key.lower() == name.lower()]
    if len(matches) > 1:
        tables = ", ".join(f"[tools.{key}]" for key in sorted(matches))
        raise AmbiguousBinding(f"tool block {name} matches several tables in grove.toml: {tables}")
    return servers[matches[0]] if matches else None


# ---------------------------------------------------------------- `$` references

def resolve_env(values: Mapping[str, str], table: str, environ: Mapping[str, str] | None = None,
                sub_kind: str = "config error") -> dict[str, str]:
    """Resolve the `$` references of an `env` or `headers` table (§8.2).

    `table` names the table in messages (`[tools.Calendar.env]`). An unset variable raises McpFailure
    (`MCP config error: [tools.Calendar.env] CAL_TOKEN refers to unset environment variable 'CAL_TOKEN'`);
    it never becomes an empty string.
    """
    env = os.environ if environ is None else environ
    return {key: resolve_value(value, f"{table} {key}", env, sub_kind) for key, value in values.items()}


def resolve_args(config: ServerConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """A stdio server's `args` with their `$` references resolved (§8.2)."""
    env = os.environ if environ is None else environ
    return [resolve_value(arg, _arg_place(config, i), env) for i, arg in enumerate(config.args)]


def _arg_place(config: ServerConfig, index: int) -> str:
    return f"[tools.{config.name}] args[{index}]"


def resolve_value(value: str, where: str, environ: Mapping[str, str], sub_kind: str = "config error") -> str:
    """`value` with every `$NAME` and `${NAME}` replaced by that variable and `$$` by `$`; a `$` followed by
    anything else stays literal (`costs $5`)."""
    def substitute(match: re.Match) -> str:
        name = _reference_name(match)
        if name is None:
            return "$"
        if not _VAR_NAME.match(name):
            raise McpFailure(sub_kind, f"{where} has an invalid variable reference "
                                       "(write $NAME or ${NAME}, or $$ for a literal $)")
        if name not in environ:
            raise McpFailure(sub_kind, f"{where} refers to unset environment variable '{name}'")
        return environ[name]
    return _REFERENCE.sub(substitute, value)


def referenced_names(value: str) -> list[str]:
    """The variables a value refers to (malformed references left out: connecting reports those)."""
    names = (_reference_name(match) for match in _REFERENCE.finditer(value))
    return [name for name in names if name is not None and _VAR_NAME.match(name)]


# `$$`, `${…}` (an unclosed brace runs to the end, to be reported as malformed) or `$NAME`.
_REFERENCE = re.compile(r"\$(?:\$|\{([^}]*)\}?|([A-Za-z_][A-Za-z0-9_]*))")


def _reference_name(match: re.Match) -> str | None:
    """The variable a reference names; None for `$$`; `""` (never a valid name) for an unclosed `${`."""
    if match.group(0) == "$$":
        return None
    if match.group(2) is not None:
        return match.group(2)
    return match.group(1) if match.group(0).endswith("}") else ""


def unset_references(config: ServerConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """Messages for every unset `$` variable of a server (E091 in verification), without connecting."""
    env = os.environ if environ is None else environ
    problems = []
    for _key, where, value in reference_places(config):
        try:
            resolve_value(value, where, env)
        except McpFailure as failure:
            problems.append(failure.message)
    if config.auth == "bearer" and config.token_env and config.token_env not in env:
        problems.append(f"[tools.{config.name}] token_env refers to unset environment variable '{config.token_env}'")
    for key in ("client_id_env", "client_secret_env"):
        name = getattr(config, key)
        if config.auth == "oauth" and name and name not in env:
            problems.append(f"[tools.{config.name}] {key} refers to unset environment variable '{name}'")
    key_file = private_key_reference(config)
    if key_file is not None and key_file not in env:
        problems.append(f"[tools.{config.name}.private_key_file] {key_file} refers to unset environment variable "
                        f"'{key_file}'")
    return problems


_KEY_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))\Z")


def private_key_reference(config: ServerConfig) -> str | None:
    """The variable `private_key_file` names when it is a `$NAME`/`${NAME}` reference to the PEM text."""
    match = _KEY_REFERENCE.match(config.private_key_file or "")
    return (match.group(1) or match.group(2)) if match else None


def reference_places(config: ServerConfig) -> list[tuple[str, str, str]]:
    """(key in the table, place named in messages, value) for every value that may hold `$` references:
    `args`, `env.K`, `headers.K`."""
    places = [("args", _arg_place(config, i), arg) for i, arg in enumerate(config.args)]
    for sub, values in (("env", config.env), ("headers", config.headers)):
        places += [(f"{sub}.{key}", f"[tools.{config.name}.{sub}] {key}", value) for key, value in values.items()]
    return places
