"""What `sage tools inspect|generate|verify` and `sage check --verify-tools` learn from live servers
(SPEC §10.2-§10.4): who the server is, the negotiated protocol, its capabilities and its full tool list.

Servers are described through one `McpManager`, so connections get the same transports, timeouts, logs and
shutdown as in a program run; all of them are started together, so that slow servers start in parallel.
This module also builds the configuration of an ad-hoc server (`--stdio "CMD ARGS"`, `--http URL`) and
renders the inspect report.
"""
from __future__ import annotations

import os
import re
import shlex
from typing import Any, Mapping
from urllib.parse import urlsplit

from .config import McpSettings, ServerConfig, parse_server
from .failures import McpFailure

_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")
# Launchers whose first plain argument names the server better than they do (`python srv.py`, `npx -y pkg`).
_LAUNCHERS = re.compile(r"(python[0-9.]*|node|npx|uvx|uv|bun|bunx|deno|sh|bash|pipx)\Z")


class AdhocError(Exception):
    """A malformed ad-hoc server description (`--env` without `=`, an empty command): a usage error."""


def _literal(value: str) -> str:
    """A value typed on the command line is literal: escape a leading `$` so that it is no `$` reference."""
    return "$" + value if value.startswith("$") else value


def parse_pairs(pairs: list[str] | None, option: str) -> dict[str, str]:
    """`K=V` arguments of `--env`/`--header` as a table of literal values."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise AdhocError(f"{option} expects K=V, got '{pair}'")
        out[key] = _literal(value)
    return out


def adhoc_config(stdio: str | None, http: str | None, env: dict[str, str], headers: dict[str, str]) -> ServerConfig:
    """The configuration of a server given on the command line. The command is split with POSIX shell rules;
    it gets the minimal environment plus `env` (§8.2) and runs in the current directory, where its relative
    paths were written."""
    if stdio is not None:
        try:
            argv = shlex.split(stdio)
        except ValueError as exc:
            raise AdhocError(f"--stdio: {exc}") from None
        if not argv:
            raise AdhocError("--stdio needs a command")
        label = _adhoc_label(argv)
        data: dict[str, Any] = {"command": argv[0], "args": argv[1:], "env": env, "cwd": os.getcwd()}
    else:
        label = _LABEL.sub("_", urlsplit(http or "").hostname or "") or "server"
        data = {"url": http, "headers": headers}
    problems: list[str] = []
    config = parse_server(label, data, label, lambda message, key, hint: problems.append(message))
    if config is None:
        raise AdhocError(problems[0] if problems else "invalid server")
    return config


def _adhoc_label(argv: list[str]) -> str:
    """The name an ad-hoc stdio server goes by in messages and its log file."""
    name = os.path.basename(argv[0])
    if _LAUNCHERS.match(name):
        name = next((os.path.basename(a.rstrip("/")) for a in argv[1:] if not a.startswith("-")), name)
    return _LABEL.sub("_", name) or "server"


def with_extras(config: ServerConfig, env: dict[str, str], headers: dict[str, str]) -> ServerConfig:
    """A configured server with `--env`/`--header` values added on top of its own tables."""
    if env or headers:
        config.env = {**config.env, **env}
        config.headers = {**config.headers, **headers}
    return config


def describe_servers(root: str, servers: Mapping[str, ServerConfig],
                     settings: McpSettings | None) -> dict[str, dict | McpFailure]:
    """Connect to every server (all started at once), describe it (`McpManager.describe`) and disconnect.
    Each entry is the description or the McpFailure that prevented it."""
    from .manager import McpManager
    manager = McpManager(root, dict(servers), settings)
    results: dict[str, dict | McpFailure] = {}
    try:
        manager.prestart(list(servers))
        for name in servers:
            try:
                results[name] = manager.describe(name)
            except McpFailure as failure:
                results[name] = failure
    finally:
        manager.close_all()
    return results


# ---------------------------------------------------------------- the inspect report

def json_report(description: dict) -> dict:
    """`--json`: `{"server": {"name", "version"}, "protocol", "transport", "capabilities", "tools"}`."""
    return {"server": {"name": description["name"], "version": description["version"]},
            "protocol": description["protocol"], "transport": description["transport"],
            "capabilities": description["capabilities"], "tools": description["tools"]}


def text_report(description: dict) -> str:
    """The report of §10.2: server line, capabilities, then every tool with its safety, description,
    parameters and output."""
    name = description["name"] or "unknown"
    version = description["version"] or "unknown"
    tools = description["tools"]
    lines = [f"server: {name} {version} (protocol {description['protocol'] or 'unknown'}, "
             f"{description['transport']})",
             f"capabilities: {capabilities_text(description['capabilities'])}",
             f"tools ({len(tools)}):"]
    for tool in tools:
        lines.append(f"  {tool.get('name', '')} [{tool.get('safety', 'destructive')}]")
        summary = first_line(tool.get("description"))
        if summary:
            lines.append(f"    {summary}")
        lines.append(f"    params: {properties_text(tool.get('inputSchema'))}")
        if isinstance(tool.get("outputSchema"), dict):
            lines.append(f"    output: {properties_text(tool['outputSchema'])}")
    return "\n".join(lines)


def first_line(text: Any) -> str:
    return text.strip().split("\n", 1)[0].strip() if isinstance(text, str) else ""


def capabilities_text(capabilities: Mapping[str, Any]) -> str:
    """`tools (listChanged), resources (subscribe, listChanged), logging`: each capability with the flags
    it sets to true."""
    parts = []
    for key, value in capabilities.items():
        flags = [k for k, v in value.items() if v is True] if isinstance(value, dict) else []
        parts.append(f"{key} ({', '.join(flags)})" if flags else key)
    return ", ".join(parts) if parts else "none"


def properties_text(schema: Any) -> str:
    """`name: json-type (required), …` for an object schema, in schema order; `none` without properties."""
    if not isinstance(schema, dict):
        return "none"
    defs = schema_defs(schema)
    schema = resolve_ref(schema, defs)
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return "none"
    required = set(schema.get("required") or [])
    return ", ".join(f"{prop}: {json_type_text(sub, defs)}" + (" (required)" if prop in required else "")
                     for prop, sub in props.items())


def schema_defs(schema: Mapping[str, Any]) -> dict:
    """The `$defs` (or draft-7 `definitions`) a schema's `$ref`s point into."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return dict(defs) if isinstance(defs, dict) else {}


def resolve_ref(schema: Any, defs: Mapping[str, Any]) -> dict:
    """Follow `$ref` into `$defs` (a bounded number of times, so a cycle of bare references ends)."""
    for _ in range(32):
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
            break
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema if isinstance(schema, dict) else {}


def json_type_text(schema: Any, defs: Mapping[str, Any]) -> str:
    """The JSON type of a property schema: `string`, `integer | null`, `array<string>`, `any`."""
    schema = resolve_ref(schema, defs)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(json_type_text(o, defs) for o in options))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind) if kind else "any"
    if kind == "array":
        items = schema.get("items")
        return f"array<{json_type_text(items, defs)}>" if isinstance(items, dict) and items else "array"
    if isinstance(kind, str):
        return kind
    if "enum" in schema:
        return "enum"
    if "properties" in schema:
        return "object"
    return "any"
