"""The pieces of dynamic MCP (SPEC §8.5) that do not need a connection: the `mcp_connect` config object,
handles and listing objects (their Sage records are built in sagepy/effects/wire.py).
"""
from __future__ import annotations

import re
from typing import Any

from ..core.json_text import parse_json
from ..grove.servers import ServerConfig, parse_server
from .failures import McpFailure
from .safety import safety_of

_HANDLE = re.compile(r"mcp:([1-9][0-9]*)\Z")
_LOG_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def handle_id(handle: str) -> int | None:
    """n of a handle `mcp:<n>`, or None when the text is not a handle."""
    m = _HANDLE.match(handle)
    return int(m.group(1)) if m else None


def parse_connect_config(config_json: str, n: int) -> ServerConfig:
    """The JSON object given to `mcp_connect`: §8.2 keys plus an optional `name` (used for logs).

    Raises McpFailure("config error", reason); the caller reports it as `invalid MCP config: <reason>`.
    """
    try:
        data = parse_json(config_json)
    except ValueError as exc:
        raise McpFailure("config error", f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise McpFailure("config error", "expected a JSON object")
    data = dict(data)
    name = data.pop("name", None)
    if name is not None and (not isinstance(name, str) or not name):
        raise McpFailure("config error", "name must be a non-empty string")
    problems: list[str] = []

    def report(message: str, key: str | None, hint: str | None) -> None:
        problems.append(f"{message} ({hint})" if hint else message)

    config = parse_server(name or f"mcp:{n}", data, "mcp_connect", report)
    if config is None:
        raise McpFailure("config error", problems[0] if problems else "invalid configuration")
    return config


def log_name(config_name: str | None, n: int) -> str:
    """`mcp-<n>.log`, or `<name>.log` when the config names the connection."""
    if config_name and not config_name.startswith("mcp:"):
        return _LOG_NAME.sub("_", config_name) + ".log"
    return f"mcp-{n}.log"


def listing_object(tool: Any, config: ServerConfig) -> dict:
    """The SDK tool object in MCP wire spelling plus its safety class (`mcp_list_tools`)."""
    data = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    data["safety"] = safety_of(data.get("annotations"), config.trust_annotations, config.safety.get(tool.name))
    return data


def parse_arguments(args_json: str) -> dict:
    """The arguments of `mcp_call`: a JSON object. Raises ValueError with the reason."""
    data = parse_json(args_json)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data
